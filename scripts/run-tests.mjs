#!/usr/bin/env node
// `npm test` (embedded: PGlite in memory, in-process counters) and `npm run test:services`
// (PostgreSQL and Redis; each test file creates and drops its own database). Extra arguments are
// test files or folders to run instead of all of them.
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import net from 'node:net';

const mode = process.argv[2];
if (mode !== 'embedded' && mode !== 'services') {
  console.error('usage: node scripts/run-tests.mjs embedded|services [files or folders...]');
  process.exit(2);
}

function collect(dir, out = []) {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules') continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) collect(p, out);
    else if (p.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

const targets = process.argv.slice(3);
const roots = targets.length ? targets : ['apps', 'packages', 'bench'];
const files = roots.flatMap((r) => (statSync(r).isDirectory() ? collect(r) : [r])).sort();

const env = { ...process.env, TEST_MODE: mode, LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent' };
if (mode === 'services') {
  env.TEST_DATABASE_URL ??= process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  env.TEST_REDIS_URL ??= process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  for (const [name, url] of [
    ['PostgreSQL', env.TEST_DATABASE_URL],
    ['Redis', env.TEST_REDIS_URL],
  ]) {
    const { hostname, port } = new URL(url);
    const ok = await new Promise((resolve) => {
      const s = net.connect({ host: hostname, port: Number(port) }, () => {
        s.end();
        resolve(true);
      });
      s.on('error', () => resolve(false));
      s.setTimeout(3000, () => {
        s.destroy();
        resolve(false);
      });
    });
    if (!ok) {
      console.error(`test:services needs ${name} at ${url}, and it is unreachable. Start it, or set TEST_DATABASE_URL / TEST_REDIS_URL.`);
      process.exit(1);
    }
  }
}
// The test files never read DATABASE_URL/REDIS_URL themselves: each builds its own config.
delete env.DATABASE_URL;
delete env.REDIS_URL;

const concurrency = process.env.TEST_CONCURRENCY ?? '2';
console.log(`running ${files.length} test files, mode ${mode}, concurrency ${concurrency}`);
const child = spawn(
  process.execPath,
  ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-timeout=300000', ...files],
  {
    stdio: 'inherit',
    env,
  },
);
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
