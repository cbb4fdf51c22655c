import { type FSWatcher, watch } from 'node:fs'
import { dirname } from 'node:path'

/**
 * Calls `onChange` (debounced) when any of `files` may have changed: fs.watch on their
 * directories, since renewals replace files by rename (editors, cert-manager's symlink swap of
 * ..data) and a watch on the old inode would go quiet; plus a periodic call for mounts that
 * send no events (NFS, some container volumes). The callback compares contents itself, so
 * a spurious call costs one read.
 */
export class FileWatch {
  private readonly watchers: FSWatcher[] = []
  private timer: NodeJS.Timeout | undefined
  private poll: NodeJS.Timeout | undefined
  private closed = false

  constructor(
    files: readonly string[],
    private readonly onChange: () => void,
    opts: { debounceMs: number; pollMs: number; onError: (err: Error) => void },
  ) {
    for (const dir of new Set(files.map((f) => dirname(f)))) {
      try {
        const w = watch(dir, { persistent: false }, () => this.schedule(opts.debounceMs))
        // A directory that goes away (an unmounted volume) stops events; the poll still runs.
        w.on('error', (err) => opts.onError(err))
        this.watchers.push(w)
      } catch (err) {
        opts.onError(err as Error)
      }
    }
    if (opts.pollMs > 0) {
      this.poll = setInterval(() => this.onChange(), opts.pollMs)
      this.poll.unref()
    }
  }

  private schedule(debounceMs: number): void {
    if (this.closed) return
    // A renewal writes several files (or one in several steps): act once it has settled.
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = setTimeout(() => {
      this.timer = undefined
      if (!this.closed) this.onChange()
    }, debounceMs)
    this.timer.unref()
  }

  close(): void {
    this.closed = true
    for (const w of this.watchers) w.close()
    if (this.timer !== undefined) clearTimeout(this.timer)
    if (this.poll !== undefined) clearInterval(this.poll)
  }
}
