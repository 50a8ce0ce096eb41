import assert from 'node:assert/strict';
import { execFile, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { freshDatabase, MODE } from './helpers.ts';
import { ROOT, servicePorts, spawnTracked, stopChild, waitForOutput } from './support/processes.ts';
import type { TestDatabase } from '@clinic/db';
import { ApiError, createClient } from '@clinic/client';
import { createDevIssuer } from '../src/platform/auth/dev-issuer.ts';

const run = promisify(execFile);

/** The ```bash block of the README that composes a video (it sets COMPOSER=). */
async function composeBlock(): Promise<string> {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  const block = [...readme.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => /^COMPOSER=/m.test(b));
  assert.ok(block, 'README has a ```bash block that composes a video');
  return block;
}

/** The first ```bash block of the README's "## Examples" section. */
async function examplesBlock(): Promise<string> {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  const section = readme.split(/^## Examples\s*$/m)[1]?.split(/^## /m)[0] ?? '';
  const block = /```bash\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(block, 'README has a ```bash block under ## Examples');
  return block;
}

describe('README examples against a live server', () => {
  let server: ChildProcess;
  let dataDir: string;
  let database: TestDatabase | null = null;
  let env: NodeJS.ProcessEnv;
  let base: string;

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'clinic-readme-'));
    const ports = await servicePorts();
    const port = ports.PORT;
    base = `http://127.0.0.1:${port}`;
    env = { ...process.env, DATA_DIR: dataDir, ...ports, LOG_LEVEL: 'warn', NODE_ENV: 'development' };
    delete env.DATABASE_URL;
    if (MODE === 'services') {
      database = await freshDatabase();
      env.DATABASE_URL = database.url!;
      env.REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
      env.REDIS_KEY_PREFIX = `readme:${port}:`;
    }
    server = spawnTracked(process.execPath, ['--import', 'tsx', 'apps/core-api/src/main.ts'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    await waitForOutput(server, /Core API/);
    await run(process.execPath, ['--import', 'tsx', 'apps/core-api/src/cli/main.ts', 'superadmin', 'grant', 'alice@example.com'], {
      cwd: ROOT,
      env,
    });
  });

  after(async () => {
    if (server) await stopChild(server);
    await database?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('every curl line of the Examples section succeeds', async () => {
    const script = (await examplesBlock()).replace(/^BASE=.*$/m, `BASE=${base}`);
    const curlLines = script.split('\n').filter((l) => /^\s*(\w+=\$\()?curl /.test(l)).length;
    assert.ok(curlLines >= 6, `expected the README to show at least 6 curl examples, found ${curlLines}`);
    const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', script], { cwd: ROOT, env });
    // Each JSON document the examples printed parses, and the important ones say what the README claims.
    const docs = stdout
      .split(/(?<=\})(?=\{)|\n/)
      .filter((s) => s.trim().startsWith('{'))
      .map((s) => JSON.parse(s));
    assert.ok(
      docs.some((d) => d.status === 'healthy'),
      'health example',
    );
    assert.ok(
      docs.some((d) => d.data?.slug === 'clinica-sud' && d.data?.language_code === 'ro'),
      'create/resolve example',
    );
    assert.ok(
      docs.some((d) => d.data?.is_superadmin === true),
      'superadmin /v1/me example',
    );
    assert.ok(
      docs.some((d) => d.data?.is_patient_at_current_org === true),
      'patient link example',
    );

    // The same server through the typed client (@clinic/client), as the README's "Typed client" shows:
    // what the examples created is there, and errors arrive as ApiError with the spec's envelope.
    const issuer = await createDevIssuer({ dataDir, issuer: 'clinic-platform-dev-issuer', audience: 'clinic-platform' });
    const patient = createClient({ baseUrl: base, token: await issuer.sign('pat@example.com') });
    const resolved = await createClient({ baseUrl: base }).resolveOrganization({ query: { slug: 'clinica-sud' } });
    assert.equal(resolved.data.data.language_code, 'ro');
    const me = await patient.getMe({ organizationId: resolved.data.data.id });
    assert.deepEqual(me.data.data.patient_org_ids, [resolved.data.data.id]);
    await assert.rejects(
      patient.createOrganization({ body: { name: 'Nope', slug: 'nope' } }),
      (err: unknown) => err instanceof ApiError && err.status === 403 && err.code === 'forbidden',
    );
  });

  // On PostgreSQL `npm start` runs the core API alone (README), so the composer is there only embedded.
  it('the compose example makes a video that plays', {
    skip: MODE === 'services' && 'the composer runs beside npm start on PostgreSQL',
  }, async () => {
    const composer = `http://127.0.0.1:${env.COMPOSER_PORT}`;
    const script = (await composeBlock()).replace(/^COMPOSER=.*$/m, `COMPOSER=${composer}`);
    const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', script], { cwd: ROOT, env });
    const answer = JSON.parse(stdout.split('\n').find((l) => l.startsWith('{"data"'))!).data;
    assert.equal(answer.exercise, 'squat');
    // Asked again until ready, as the README says (each answer comes from the cache row).
    const body = script.match(/-d '([^']+)'/)![1]!;
    let ready = answer;
    for (let i = 0; ready.status !== 'ready' && i < 600; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const res = await fetch(`${composer}/v1/compose`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      ready = ((await res.json()) as { data: typeof answer }).data;
    }
    assert.equal(ready.status, 'ready');
    const playlist = await (await fetch(ready.playback_hls_url)).text();
    assert.match(playlist, /^#EXTM3U/);
    const segment = playlist.split('\n').find((l) => l.endsWith('.ts'))!;
    const seg = await fetch(new URL(segment, ready.playback_hls_url));
    assert.equal(seg.status, 200);
    assert.ok((await seg.arrayBuffer()).byteLength > 1000, 'a segment with video in it');
  });
});
