import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The console's pages, by URL path: plain files, no framework and nothing fetched from elsewhere. */
export const STATIC_FILES: Readonly<Record<string, { name: string; type: string }>> = {
  '/index.html': { name: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { name: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/charts.js': { name: 'charts.js', type: 'text/javascript; charset=utf-8' },
  '/app.css': { name: 'app.css', type: 'text/css; charset=utf-8' },
}

/**
 * Where those files are: next to this module in the sources (src/console/static), and
 * in dist/console once built, where tsup bundles this module into dist/*.js and the
 * build copies the folder (see tsup.config.ts).
 */
export function staticDir(): string {
  const here = dirname(fileURLToPath(import.meta.url))
  for (const dir of [join(here, 'static'), join(here, 'console')]) {
    if (existsSync(join(dir, 'index.html'))) return dir
  }
  throw new Error(`the console's static files are missing (looked in ${here}/static and ${here}/console)`)
}
