/**
 * The booking page's first load: the JavaScript it loads before anything else (its entry script and the
 * module preloads of dist/booking/index.html), gzipped, against the 150 KB budget; and, given a running
 * booking page (BOOKING_URL, e.g. http://demo.localhost:3003/), the time from navigation to the first free
 * slot on screen in Debian's chromium, over a few fresh loads.
 *
 *   npm run build -w @clinic/web && npx tsx bench/booking-page.ts
 *   BOOKING_URL=http://demo.localhost:3003/ npx tsx bench/booking-page.ts
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

const dist = join(import.meta.dirname, '../apps/web/dist');
const html = readFileSync(join(dist, 'booking/index.html'), 'utf8');
const refs = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
let js = 0;
let css = 0;
for (const r of refs) {
  const size = gzipSync(readFileSync(join(dist, r)), { level: 9 }).length;
  if (r.endsWith('.js')) js += size;
  else if (r.endsWith('.css')) css += size;
}
console.log(`booking page first load: JS ${(js / 1024).toFixed(1)} KB gzipped (budget 150 KB), CSS ${(css / 1024).toFixed(1)} KB gzipped`);
if (js > 150 * 1024) process.exitCode = 1;

const url = process.env.BOOKING_URL;
if (url && existsSync('/usr/bin/chromium')) {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] });
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const context = await browser.newContext();
    const page = await context.newPage();
    const t0 = performance.now();
    await page.goto(url);
    await page
      .getByRole('button', { name: /^\d{1,2}:\d{2}/ })
      .first()
      .waitFor({ timeout: 30_000 });
    times.push(performance.now() - t0);
    await context.close();
  }
  await browser.close();
  times.sort((a, b) => a - b);
  console.log(
    `time to first slot shown (fresh context, ${times.length} loads): median ${times[2]!.toFixed(0)} ms, min ${times[0]!.toFixed(0)}, max ${times[4]!.toFixed(0)}`,
  );
}
