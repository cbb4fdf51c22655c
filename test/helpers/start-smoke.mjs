#!/usr/bin/env node
// `npm start` as a newcomer runs it (.ci/run calls this): it must build, listen on
// 127.0.0.1:9092 and answer ApiVersions, and SIGTERM to the npm process must stop the
// broker cleanly (exit 0) without leaving any process of its tree behind. Plain
// Node and a raw socket on purpose: nothing here may depend on the code under test.
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../../', import.meta.url))
const HOST = '127.0.0.1'
const PORT = 9092
const READY_TIMEOUT_MS = Number(process.env.START_SMOKE_TIMEOUT_MS ?? 300_000)
const STOP_TIMEOUT_MS = 30_000
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** ApiVersions v0 (header v1, empty body); resolves with the advertised api keys. */
function apiVersions(timeoutMs = 2_000) {
  return new Promise((resolve, reject) => {
    const clientId = Buffer.from('start-smoke')
    const req = Buffer.alloc(4 + 2 + 2 + 4 + 2 + clientId.length)
    let o = req.writeInt32BE(req.length - 4, 0)
    o = req.writeInt16BE(18, o)
    o = req.writeInt16BE(0, o)
    o = req.writeInt32BE(7, o)
    o = req.writeInt16BE(clientId.length, o)
    clientId.copy(req, o)
    const socket = connect(PORT, HOST)
    const timer = setTimeout(() => socket.destroy(new Error('no ApiVersions answer in time')), timeoutMs)
    let buf = Buffer.alloc(0)
    socket.on('connect', () => socket.write(req))
    socket.on('error', (e) => {
      clearTimeout(timer)
      reject(e)
    })
    socket.on('data', (d) => {
      buf = Buffer.concat([buf, d])
      if (buf.length < 4 || buf.length < 4 + buf.readInt32BE(0)) return
      clearTimeout(timer)
      socket.destroy()
      try {
        if (buf.readInt32BE(4) !== 7) throw new Error(`correlation id ${buf.readInt32BE(4)}, sent 7`)
        const errorCode = buf.readInt16BE(8)
        if (errorCode !== 0) throw new Error(`ApiVersions error code ${errorCode}`)
        const n = buf.readInt32BE(10)
        const keys = []
        for (let i = 0; i < n; i++) keys.push(buf.readInt16BE(14 + i * 6))
        resolve(keys)
      } catch (e) {
        reject(e)
      }
    })
  })
}

/** Every descendant of `pid` (Linux /proc), so the check covers sh, turbo and node. */
function descendants(pid) {
  const children = new Map()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    let stat
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
    } catch {
      continue
    }
    // The command name sits in parentheses and may contain spaces: read after it.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
    if (!children.has(ppid)) children.set(ppid, [])
    children.get(ppid).push(Number(entry))
  }
  const out = []
  const queue = [pid]
  while (queue.length) {
    for (const c of children.get(queue.shift()) ?? []) {
      out.push(c)
      queue.push(c)
    }
  }
  return out
}

const alive = (pid) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
const cmdline = (pid) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim()
  } catch {
    return '?'
  }
}

async function main() {
  if (await apiVersions(1_000).then(() => true, () => false)) {
    throw new Error(`something already answers on ${HOST}:${PORT}; the smoke needs the port npm start uses`)
  }
  const dataDir = `${root}data`
  const hadData = existsSync(dataDir)
  const npm = spawn('npm', ['start'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] })
  const exited = new Promise((resolve) => npm.once('exit', (code, signal) => resolve({ code, signal })))
  let tree = []
  try {
    const deadline = Date.now() + READY_TIMEOUT_MS
    let keys
    while (!keys) {
      if (npm.exitCode !== null || npm.signalCode !== null) throw new Error(`npm start exited (${npm.exitCode ?? npm.signalCode}) before answering`)
      if (Date.now() > deadline) throw new Error(`npm start did not answer ApiVersions on ${PORT} within ${READY_TIMEOUT_MS} ms`)
      keys = await apiVersions().catch(() => undefined)
      if (!keys) await sleep(250)
    }
    if (!keys.includes(18) || !keys.includes(0)) throw new Error(`ApiVersions lacks Produce or ApiVersions: ${keys.join(',')}`)
    tree = descendants(npm.pid)
    console.log(`start-smoke: ApiVersions answered (${keys.length} APIs); process tree: ${tree.map((p) => `${p} ${cmdline(p)}`).join(' | ')}`)
    npm.kill('SIGTERM')
    const stop = await Promise.race([exited, sleep(STOP_TIMEOUT_MS).then(() => undefined)])
    if (!stop) throw new Error(`npm start did not exit within ${STOP_TIMEOUT_MS} ms of SIGTERM`)
    if (stop.code !== 0) throw new Error(`npm start exited with ${stop.code ?? stop.signal} after SIGTERM, expected 0`)
    await sleep(500)
    const left = tree.filter(alive)
    if (left.length) throw new Error(`processes left after npm start exited: ${left.map((p) => `${p} ${cmdline(p)}`).join(' | ')}`)
    if (await apiVersions(1_000).then(() => true, () => false)) throw new Error(`port ${PORT} still answers after npm start exited`)
    console.log('start-smoke: SIGTERM -> exit 0, no process left')
  } finally {
    for (const p of new Set([...descendants(npm.pid), ...tree, npm.pid])) if (alive(p)) process.kill(p, 'SIGKILL')
    if (!hadData) rmSync(dataDir, { recursive: true, force: true })
  }
}

main().catch((e) => {
  console.error(`start-smoke: ${e.message}`)
  process.exit(1)
})
