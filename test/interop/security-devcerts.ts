/**
 * Pieces shared by test/interop/security-broker.test.ts and security-broker-devcerts.test.ts:
 * a peer command run with a deadline, an optional peer's version probe, README shell lines run
 * in their own process group, and a Java program that tries TLS settings.
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { KAFKA_VERSIONS, peerUnavailable } from '../helpers/kafka.js'

/** The Kafka release whose Java client and tools these files run. */
export const version = KAFKA_VERSIONS.latest
/** Debian's python3, which has kafka-python and confluent-kafka. */
export const PYTHON = '/usr/bin/python3'
/** The SCRAM user alice's password on the brokers these files start. */
export const PASSWORD = 'alice-Secret-7'


/** The lines of the first ```sh block after `heading` in a markdown file. */
export function shellBlock(file: URL, heading: string): string[] {
  const text = readFileSync(file, 'utf8')
  const block = /```sh\n([\s\S]*?)```/.exec(text.slice(text.indexOf(heading)))?.[1]
  return (block ?? '').trim().split('\n')
}

export interface ShellRun {
  readonly out: () => string
  readonly err: () => string
  /** 'done' once `marker` is on stdout; otherwise how the shell ended or 'timed out'. */
  waitFor(marker: string, timeoutMs: number): Promise<string>
  /** Ends the shell and everything it started in the background (SIGTERM, then SIGKILL after 30 s). */
  stop(): Promise<void>
}

/** Runs `script` with bash in `cwd`, in its own process group so a background broker goes with it. */
export function runShell(script: string, cwd: string): ShellRun {
  const child = spawn('bash', ['-c', script], { cwd, detached: true, stdio: ['pipe', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d))
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d))
  // 'exit', not 'close': a broker left in the background keeps the pipes open after a failed line.
  const exited = new Promise<string>((resolve) => child.on('exit', (code) => resolve(`exited ${code}`)))
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()))
  return {
    out: () => out,
    err: () => err,
    async waitFor(marker, timeoutMs) {
      let timer: NodeJS.Timeout | undefined
      const started = Date.now()
      return Promise.race([
        exited,
        new Promise<string>((resolve) => {
          timer = setInterval(() => {
            if (out.includes(marker)) resolve('done')
            else if (Date.now() - started > timeoutMs) resolve('timed out')
          }, 100)
        }),
      ]).finally(() => clearInterval(timer))
    },
    async stop() {
      try {
        process.kill(-child.pid!, 'SIGTERM')
      } catch {
        // already gone
      }
      const gone = await Promise.race([closed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 30_000))])
      if (!gone) process.kill(-child.pid!, 'SIGKILL')
    },
  }
}

/** One JVM for every case: an Admin client per case (bootstrap and properties), describeCluster then createTopics. */
export const TLS_PROBE = `
import java.nio.file.*;
import java.util.*;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.Node;

public class TlsProbe {
  public static void main(String[] args) throws Exception {
    for (String arg : args) {
      String[] p = arg.split("\\\\|", 3);
      Properties props = new Properties();
      try (var in = Files.newInputStream(Path.of(p[2]))) { props.load(in); }
      props.put("bootstrap.servers", p[1]);
      props.put("default.api.timeout.ms", "30000");
      props.put("request.timeout.ms", "20000");
      try (Admin admin = Admin.create(props)) {
        var nodes = admin.describeCluster().nodes().get(40, TimeUnit.SECONDS);
        admin.createTopics(List.of(new NewTopic("probe-" + p[0], 1, (short) 1))).all().get(40, TimeUnit.SECONDS);
        Node n = nodes.iterator().next();
        System.out.println("probe " + p[0] + " OK nodes " + n.host() + ":" + n.port() + " topic created");
      } catch (Exception e) {
        StringBuilder why = new StringBuilder();
        Throwable c = e.getCause() != null ? e.getCause() : e;
        why.append(c.getClass().getSimpleName());
        for (Throwable t = c; t != null; t = t.getCause()) why.append(" <- ").append(t.getMessage());
        System.out.println("probe " + p[0] + " FAIL " + why.toString().replace('\\n', ' '));
      }
    }
  }
}
`

/** Runs a peer command with its stdin given; killed after timeoutMs (its status is then null). */
export function run(cmd: string, args: string[], input?: string, timeoutMs = 90_000): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.on('close', (status) => {
      clearTimeout(timer)
      resolve({ status, stdout, stderr })
    })
    child.stdin.end(input ?? '')
  })
}

/** The peer's version, or undefined when it is missing (peerUnavailable: under CI=true that fails). */
export function optional(peer: string, probe: () => string): string | undefined {
  try {
    return probe()
  } catch (e) {
    peerUnavailable(peer, e)
    return undefined
  }
}
