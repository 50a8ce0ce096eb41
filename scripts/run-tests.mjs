#!/usr/bin/env node
// `npm test` (embedded: PGlite in memory, in-process counters) and `npm run test:services`
// (PostgreSQL and Redis; each test file creates and drops its own database). Extra arguments are
// test files or folders to run instead of all of them.
//
// Before the files run, one migrated template database is made (a PGlite image, or a template
// database on the server) and every test database starts as a copy of it. The run gets a folder of
// its own that is the test processes' TMPDIR, so whatever a test leaves in the temporary folder goes
// with the run; the folder and the template are removed at the end, also on Ctrl-C.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// `npm run test:citus`: the services suites against a Citus coordinator (docs/scaling.md). CITUS_URL names the
// coordinator's maintenance database (postgres://postgres@127.0.0.1:9700/postgres for ../shared/citus/cluster.sh);
// each test database is created on every node and distributed by the migrations.
const citus = process.argv[2] === 'citus';
if (citus) {
  if (!process.env.CITUS_URL) {
    console.error(
      'test:citus needs CITUS_URL, the URL of a Citus coordinator (e.g. postgres://postgres@127.0.0.1:9700/postgres after `bash ../shared/citus/cluster.sh start`); no test ran.',
    );
    process.exit(1);
  }
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: process.env.CITUS_URL });
  const workers = await client
    .connect()
    .then(() =>
      client.query(
        "select count(*)::int as n from pg_extension e, pg_dist_node d where e.extname = 'citus' and d.groupid <> 0 and d.noderole = 'primary'",
      ),
    )
    .then((r) => r.rows[0].n)
    .catch((err) => {
      console.error(`test:citus: ${process.env.CITUS_URL} is not a Citus coordinator with workers (${err.message}); no test ran.`);
      process.exit(1);
    })
    .finally(() => client.end().catch(() => undefined));
  if (!workers) {
    console.error(`test:citus: ${process.env.CITUS_URL} has no Citus workers; no test ran.`);
    process.exit(1);
  }
  process.env.TEST_DATABASE_URL = process.env.CITUS_URL;
  process.env.TEST_CITUS = '1';
}
const mode = citus ? 'services' : process.argv[2];
if (mode !== 'embedded' && mode !== 'services') {
  console.error('usage: node scripts/run-tests.mjs embedded|services|citus [files or folders...]');
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

// The AWS SDK's notice that its releases after January 2027 need Node 22 (docs/decisions.md) is said by
// `npm start` and the services; in the test output it would only repeat in every S3 test file.
const env = {
  ...process.env,
  TEST_MODE: mode,
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ?? 'true',
};
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

const runDir = mkdtempSync(join(tmpdir(), 'clinic-test-run-'));
env.TMPDIR = runDir;
const adminArg = mode === 'services' ? env.TEST_DATABASE_URL : '-';
const templateScript = join(import.meta.dirname, 'test-template.ts');

let template = null;
let child = null;
let cleaned = false;
function cleanup() {
  if (cleaned) return;
  cleaned = true;
  if (template) spawnSync(process.execPath, ['--import', 'tsx', templateScript, 'drop', adminArg, template], { stdio: 'inherit', env });
  rmSync(runDir, { recursive: true, force: true });
}
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    child?.kill(signal);
    cleanup();
    process.exit(130);
  });
}

// Embedded mode: every test file starts PGlite, whose 9 MB of WASM V8 first compiles with its baseline compiler
// (Liftoff) and then again, optimised, in the background. A test file is too short to earn that back: with
// --liftoff-only a database from the template took 2.3 s of CPU instead of 3.3 s, and 5,000 inserts after
// it ran within 10% of the optimised code; the template's migrations took 5.3 s of CPU instead of 7.3
// (docs/operations.md). It changes nothing PGlite does.
const v8Flags = mode === 'embedded' ? ['--liftoff-only'] : [];
const made = spawnSync(process.execPath, [...v8Flags, '--import', 'tsx', templateScript, 'create', adminArg, runDir], {
  env,
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'inherit'],
});
if (made.status !== 0 || !made.stdout) {
  console.error('could not make the migrated template database (the error is above); no test ran');
  cleanup();
  process.exit(1);
}
template = made.stdout.trim();
env.TEST_DB_TEMPLATE = template;

const concurrency = process.env.TEST_CONCURRENCY ?? '2';
console.log(`running ${files.length} test files, mode ${mode}, concurrency ${concurrency}`);
// The per-test timeout only stops a hung test from holding CI forever; no test is meant to come near it.
child = spawn(
  process.execPath,
  [...v8Flags, '--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-timeout=900000', ...files],
  {
    stdio: 'inherit',
    env,
  },
);
child.on('exit', (code, signal) => {
  cleanup();
  process.exit(code ?? (signal ? 1 : 0));
});
