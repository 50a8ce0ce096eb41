/**
 * The clinic calendar's week view of 30 specialists with 2,000 appointments, rendered in Debian's chromium
 * from a production build of the real grid component (bench/clinic-calendar/, built here into a temporary
 * folder): render() to the DOM committed, and to the next frame (layout and paint). Target: under 300 ms.
 *
 *   npx tsx bench/clinic-calendar.ts
 */
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, extname, join, normalize } from 'node:path';
import react from '@vitejs/plugin-react';
import { chromium } from 'playwright-core';
import { build } from 'vite';

const root = join(import.meta.dirname, 'clinic-calendar');
const out = await mkdtemp(join(tmpdir(), 'clinic-calendar-bench-'));
process.env.NODE_ENV = 'production';
await build({ root, base: '/', logLevel: 'warn', plugins: [react()], build: { outDir: out, emptyOutDir: true } });

const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' };
const server = createServer(async (req, res) => {
  const path = normalize(join(out, (req.url ?? '/').split('?')[0] === '/' ? 'index.html' : (req.url ?? '/').split('?')[0]!));
  if (!path.startsWith(out)) return res.writeHead(404).end();
  try {
    const body = await readFile(path);
    res.writeHead(200, { 'content-type': types[extname(path)] ?? 'application/octet-stream' }).end(body);
  } catch {
    res.writeHead(404).end();
  }
});
await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
const port = (server.address() as { port: number }).port;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  await page.goto(`http://127.0.0.1:${port}/`);
  await page.waitForFunction(() => document.title === 'ready');
  const runs = await page.evaluate(() =>
    (window as unknown as { benchRun: () => Promise<{ commit: number; frame: number; blocks: number }[]> }).benchRun(),
  );
  // The first mount warms the JIT; the rest are reported.
  const rest = runs.slice(1);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const commit = median(rest.map((r) => r.commit));
  const frame = median(rest.map((r) => r.frame));
  console.log(
    `clinic calendar, week view, 30 specialists x 7 days (210 columns), 2,000 appointments placed (${runs[0]!.blocks} blocks rendered: the columns in view):`,
  );
  console.log(`  first mount (cold): render+commit ${runs[0]!.commit.toFixed(0)} ms, to next frame ${runs[0]!.frame.toFixed(0)} ms`);
  console.log(
    `  warm mounts (median of ${rest.length}): render+commit ${commit.toFixed(0)} ms, to next frame ${frame.toFixed(0)} ms (target < 300 ms)`,
  );
  if (frame >= 300) process.exitCode = 1;
  await page.evaluate(() => (window as unknown as { benchShow: () => void }).benchShow());
  const shot = join(import.meta.dirname, '..', 'test-artifacts', 'screenshots', 'clinic-calendar-bench-week.png');
  await mkdir(dirname(shot), { recursive: true });
  await page.screenshot({ path: shot });
  console.log(`  screenshot: test-artifacts/screenshots/clinic-calendar-bench-week.png`);
} finally {
  await browser.close();
  server.close();
  await rm(out, { recursive: true, force: true });
}
