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
import { skipWithoutFfmpeg } from '@clinic/composer';

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

/** The ```bash block of the Examples section that sets up a reminder rule (it posts to /v1/automation-rules). */
async function reminderBlock(): Promise<string> {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  const section = readme.split(/^## Examples\s*$/m)[1]?.split(/^## /m)[0] ?? '';
  const block = [...section.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.includes('/v1/automation-rules'));
  assert.ok(block, 'README has a ```bash block under ## Examples that makes a reminder rule');
  return block;
}

/** The ```bash block of the Examples section that takes a patient through a treatment plan session (it posts to /v1/treatment-plans). */
async function telerehabBlock(): Promise<string> {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  const section = readme.split(/^## Examples\s*$/m)[1]?.split(/^## /m)[0] ?? '';
  const block = [...section.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.includes('/v1/treatment-plans'));
  assert.ok(block, 'README has a ```bash block under ## Examples that runs a treatment plan session');
  return block;
}

describe('README examples against a live server', () => {
  let server: ChildProcess;
  let telemetry: ChildProcess | null = null;
  let worker: ChildProcess | null = null;
  let dataDir: string;
  let database: TestDatabase | null = null;
  let env: NodeJS.ProcessEnv;
  let base: string;

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'clinic-readme-'));
    const ports = await servicePorts();
    const port = ports.PORT;
    base = `http://127.0.0.1:${port}`;
    // The reminder example waits for the worker's sweep: every second here instead of every 30.
    env = { ...process.env, DATA_DIR: dataDir, ...ports, LOG_LEVEL: 'warn', NODE_ENV: 'development', AUTOMATIONS_SWEEP_SECONDS: '1' };
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
    if (telemetry) await stopChild(telemetry);
    if (worker) await stopChild(worker);
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
    // The booking example: the guest's appointment, scheduled on a slot of the weekday hours (09:00-13:00 in
    // Bucharest), tied to no patient; the front desk's list has it, and the page no longer offers its time.
    const booked = docs.find((d) => d.data?.source === 'guest')?.data;
    assert.ok(booked, 'guest booking example');
    assert.deepEqual(
      [booked.status, booked.patient_id, booked.guest_name, booked.guest_email, booked.guest_consents],
      ['scheduled', null, 'Ion Popa', 'ion.popa@example.com', [{ purpose_code: 'org_privacy_notice', purpose_version: 1 }]],
    );
    const local = new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Bucharest', weekday: 'short', hour: '2-digit', minute: '2-digit' });
    assert.match(local.format(new Date(booked.starts_at)), /^(Mon|Tue|Wed|Thu|Fri) 09:00$/, 'the first free slot of the coming week');
    assert.equal(Date.parse(booked.ends_at) - Date.parse(booked.starts_at), 30 * 60_000);
    assert.ok(
      docs.some(
        (d) => Array.isArray(d.data) && d.data.some((a: { id: string; status: string }) => a.id === booked.id && a.status === 'scheduled'),
      ),
      'the front desk lists the booking',
    );
    const day = new Date(booked.starts_at).toISOString().slice(0, 10);
    const page = await fetch(
      `${base}/v1/public/availability?organization=clinica-sud&service_id=${booked.service_id}&from=${day}&to=${day}&time_zone=UTC`,
    );
    const free = ((await page.json()) as { data: { slots: { start: string }[] } }).data.slots.map((s) => Date.parse(s.start));
    assert.ok(free.length > 0 && !free.includes(Date.parse(booked.starts_at)), 'the booked time is no longer offered');

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

  it('the reminder example: a 24-hours-before rule, a public booking, and the message in the outbox', async () => {
    // On PostgreSQL `npm start` runs the core API alone: the worker is its own process (`npm run worker`).
    if (MODE === 'services') {
      worker = spawnTracked(process.execPath, ['--import', 'tsx', 'apps/core-api/src/worker/main.ts'], {
        cwd: ROOT,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      await waitForOutput(worker, /Worker running/);
    }
    const script = (await reminderBlock()).replace(/^BASE=.*$/m, `BASE=${base}`);
    const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', script], { cwd: ROOT, env });
    const docs = stdout
      .split(/(?<=\})(?=\{)|\n/)
      .filter((s) => s.trim().startsWith('{'))
      .map((s) => JSON.parse(s));
    const rule = docs.find((d) => d.data?.trigger?.type === 'appointment_offset')?.data;
    assert.deepEqual([rule.trigger.offset_minutes, rule.status, rule.actions[0].type], [-1440, 'active', 'send_email']);
    // The guest's reminder: one message, sent to the outbox, in the clinic's language (a guest has none of its own).
    const messages = docs.find((d) => Array.isArray(d.data) && d.data[0]?.channel === 'email')?.data;
    assert.equal(messages.length, 1);
    const [m] = messages;
    assert.deepEqual(
      [m.status, m.provider, m.to_address, m.language, m.subject, m.purpose],
      ['sent', 'outbox', 'maria.dobre@example.com', 'ro', 'Programarea dumneavoastră la Clinica Sud', 'transactional'],
    );
    assert.match(m.body_text, /^Bună ziua, Maria! Vă așteptăm .+, ora .+, la Clinica Sud Centru\.$/);
    // The CLI's listing names it, and its .eml file carries the visit as an .ics attachment.
    const listed = stdout.split('\n').findIndex((l) => l.includes('  email  maria.dobre@example.com  "Programarea'));
    assert.ok(listed >= 0, stdout);
    const file = stdout.split('\n')[listed + 1]!.trim();
    assert.ok(file.endsWith(`${m.id}.eml`) && file.startsWith(join(dataDir, 'outbox')), file);
    const eml = await readFile(file, 'utf8');
    assert.match(eml, /^To: maria\.dobre@example\.com\r?$/m);
    assert.match(eml, /^Content-Type: text\/calendar/m);
    assert.match(eml, /filename=appointment\.ics/);
  });

  // On PostgreSQL `npm start` runs the core API alone (README), so the composer is there only embedded.
  it('the compose example makes a video that plays', {
    skip: (MODE === 'services' && 'the composer runs beside npm start on PostgreSQL') || skipWithoutFfmpeg(),
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

  it('the telerehab example takes a patient from enrollment to a completed session with a rep count', async () => {
    // On PostgreSQL `npm start` runs the core API alone: telemetry is its own process (`npm run telemetry`), which
    // verifies session tokens against the API's key; patients' own tokens (media events) are not used here.
    if (MODE === 'services') {
      telemetry = spawnTracked(process.execPath, ['--import', 'tsx', 'apps/telemetry/src/main.ts'], {
        cwd: ROOT,
        env: {
          ...env,
          CORE_API_URL: base,
          AUTH_JWKS_URL: `${base}/unused/jwks.json`,
          AUTH_ISSUER: 'clinic-platform-dev-issuer',
          LOG_LEVEL: 'info',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      await waitForOutput(telemetry, /Server listening/);
    }
    const script = (await telerehabBlock())
      .replace(/^BASE=.*$/m, `BASE=${base}`)
      .replace(/^TELEMETRY=.*$/m, `TELEMETRY=http://127.0.0.1:${env.TELEMETRY_PORT}`);
    const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', script], { cwd: ROOT, env });
    const docs = stdout
      .split(/(?<=\})(?=\{)|\n/)
      .filter((s) => s.trim().startsWith('{'))
      // A curl answer has no newline, so the generator's line may follow it.
      .map((s) => JSON.parse(s.slice(0, s.lastIndexOf('}') + 1)));
    assert.ok(
      docs.some((d) => d.data?.enabled === true && d.data?.intended_use?.accepted_version),
      'telerehab enabled',
    );
    // Telemetry's own answer at the end, then the plan session that copied it.
    const ended = docs.find((d) => d.data?.result?.rep_count !== undefined)?.data;
    assert.deepEqual([ended?.result.rep_count, ended?.result.algorithm_version], [5, 'pose-score/1'], stdout);
    const done = docs.find((d) => d.data?.status === 'completed' && d.data?.results)?.data;
    assert.ok(done, stdout);
    assert.deepEqual([done.plan_day, done.pain, done.results.rep_count, done.results.algorithm_version], [1, 2, 5, 'pose-score/1']);
    assert.ok(done.results.form_score > 0 && done.results.rom.left_knee.range_deg > 0, JSON.stringify(done.results));
    assert.equal(done.results.udi_di, done.labelling.udi_di, 'the software labelling the result');
    const progress = docs.find((d) => d.data?.adherence)?.data;
    assert.deepEqual([progress.adherence.days_due, progress.adherence.days_completed, progress.exercises[0].total_reps], [1, 1, 5]);
  });
});
