import { readdirSync, readFileSync } from 'node:fs'

/** Resident set size of a process in MiB, from /proc/<pid>/status (VmRSS), or NaN once it is gone. */
export function rssMiB(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m === null ? NaN : Number(m[1]) / 1024
  } catch {
    return NaN
  }
}

/** Samples a process's RSS every `everyMs` until stopped; returns the peak. */
export function sampleRss(pid: number, everyMs = 100): { stop(): number } {
  let peak = rssMiB(pid)
  const timer = setInterval(() => {
    const r = rssMiB(pid)
    if (!(r <= peak)) peak = r
  }, everyMs)
  return {
    stop() {
      clearInterval(timer)
      const r = rssMiB(pid)
      return r > peak ? r : peak
    },
  }
}

/** The command line of a process, as its arguments. */
export function cmdline(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((a) => a !== '')
}

/** Processes whose command line contains every one of `parts`. */
export function findProcesses(...parts: string[]): number[] {
  const out: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const line = readFileSync(`/proc/${name}/cmdline`, 'utf8')
      if (parts.every((p) => line.includes(p))) out.push(Number(name))
    } catch {
      // gone meanwhile
    }
  }
  return out
}
