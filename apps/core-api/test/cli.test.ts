import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openPglite } from '@clinic/db';
import { jwtVerify } from 'jose';
import { createDevIssuer } from '../src/platform/auth/dev-issuer.ts';
import { MODE, uniqueEmail } from './helpers.ts';
import { ROOT, servicePorts, spawnTracked, stopChild, waitForOutput } from './support/processes.ts';

// These tests run the real entry points as separate processes, on the embedded default (a DATA_DIR
// folder); they do not depend on the test mode, so they run in `npm test` only (the longest file of the
// suite, about 85 s: `npm run test:services` would only repeat them).
const TOKEN = 'apps/core-api/src/cli/token.ts';
const CLI = 'apps/core-api/src/cli/main.ts';
const MAIN = 'apps/core-api/src/main.ts';
const DEV = { issuer: 'clinic-platform-dev-issuer', audience: 'clinic-platform' };

/** The environment of a spawned command: nothing of the test runner's, nothing pointing at shared services. */
function envWith(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'warn', NODE_ENV: 'development', ...extra };
  for (const k of ['DATABASE_URL', 'REDIS_URL', 'AUTH_JWKS_URL', 'AUTH_ISSUER', 'NODE_TEST_CONTEXT', 'NODE_OPTIONS'])
    if (!(k in extra)) delete env[k];
  return env;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function start(script: string, args: string[], env: Record<string, string>): ChildProcess {
  return spawnTracked(process.execPath, ['--import', 'tsx', script, ...args], {
    cwd: ROOT,
    env: envWith(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs a command to its end. No deadline of its own: a hung command is the test runner's time-out to stop. */
function run(script: string, args: string[], env: Record<string, string>): Promise<Run> {
  const child = start(script, args, env);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c) => (stdout += c));
  child.stderr!.on('data', (c) => (stderr += c));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** Starts main.ts on free ports for every service and resolves once it prints its URL; rejects if it exits first. */
async function startServer(dataDir: string): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const child = start(MAIN, [], { DATA_DIR: dataDir, ...(await servicePorts()), HOST: '127.0.0.1' });
  const { match, output } = await waitForOutput(child, /Core API\s+(http:\/\/\S+)/);
  return { child, url: match[1]!, output };
}

const stop = stopChild;

const dirs: string[] = [];
async function tempDataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'clinic-cli-test-'));
  dirs.push(dir);
  return dir;
}
after(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function readSuperadmin(dataDir: string, email: string) {
  const db = await openPglite(join(dataDir, 'pgdata'));
  try {
    const { rows } = await db.query<{ id: string; email: string; roles: string[]; grants: number }>(
      `select u.id, u.email,
              array(select pm.role from platform_memberships pm where pm.user_id = u.id order by 1) as roles,
              (select count(*)::int from audit_logs a where a.entity_id = u.id and a.action = 'platform_role.granted') as grants
       from users u where lower(u.email) = lower($1)`,
      [email],
    );
    return rows;
  } finally {
    await db.close();
  }
}

// The suites run side by side (each has its own data folder; most of the time is process start-up);
// the tests inside each suite run in order.
describe('command line', { concurrency: true, skip: MODE === 'services' && 'independent of the test mode: runs in npm test' }, () => {
  describe('npm run token', { concurrency: 1 }, () => {
    let dataDir: string;
    before(async () => {
      dataDir = await tempDataDir();
    });

    it('prints exactly one line, a JWT that the development issuer of the same DATA_DIR verifies', async () => {
      const email = uniqueEmail('token');
      const res = await run(TOKEN, [email], { DATA_DIR: dataDir });
      assert.equal(res.code, 0, res.stderr);
      assert.equal(res.stderr, '');
      const lines = res.stdout.split('\n');
      assert.equal(lines.length, 2, `stdout must be one line: ${JSON.stringify(res.stdout)}`);
      assert.equal(lines[1], '');
      const token = lines[0]!;
      assert.match(token, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);

      const issuer = await createDevIssuer({ dataDir, ...DEV });
      const { payload, protectedHeader } = await jwtVerify(token, issuer.keys, { issuer: DEV.issuer, audience: DEV.audience });
      assert.equal(payload.email, email);
      assert.equal(protectedHeader.alg, 'RS256');
      assert.ok(typeof payload.sub === 'string' && payload.sub.length > 0);
      assert.ok(payload.exp! > Date.now() / 1000);

      // The key belongs to the folder: another folder's issuer does not accept the token.
      const other = await createDevIssuer({ dataDir: await tempDataDir(), ...DEV });
      await assert.rejects(jwtVerify(token, other.keys, { issuer: DEV.issuer, audience: DEV.audience }));
    });

    it('a bad email exits 2 with usage on stderr and nothing on stdout; an external issuer makes it refuse', async () => {
      const [bad, external] = await Promise.all([
        run(TOKEN, ['not-an-email'], { DATA_DIR: dataDir }),
        run(TOKEN, [uniqueEmail()], {
          DATA_DIR: dataDir,
          AUTH_JWKS_URL: 'https://idp.example.test/.well-known/jwks.json',
          AUTH_ISSUER: 'https://idp.example.test/',
        }),
      ]);
      assert.equal(bad.code, 2, bad.stderr);
      assert.equal(bad.stdout, '');
      assert.match(bad.stderr, /usage/);
      assert.equal(external.code, 1, external.stderr);
      assert.equal(external.stdout, '');
      assert.match(external.stderr, /development issuer/);
    });
  });

  // One data folder through its life: CLI alone (creating the folder), then a server, then the CLI beside
  // it. Creating an embedded database is the slow part, so it happens once.
  describe('npm run cli and npm start on one data folder', { concurrency: 1 }, () => {
    let dataDir: string;
    let server: Awaited<ReturnType<typeof startServer>> | undefined;
    const early = uniqueEmail('root');
    before(async () => {
      dataDir = await tempDataDir();
    });
    after(async () => {
      if (server) await stop(server.child, 'SIGKILL');
    });

    it('no command exits 2 with the usage on stderr; help prints it on stdout and exits 0', async () => {
      const [none, help] = await Promise.all([run(CLI, [], { DATA_DIR: dataDir }), run(CLI, ['help'], { DATA_DIR: dataDir })]);
      assert.equal(none.code, 2, none.stderr);
      assert.equal(none.stdout, '');
      assert.match(none.stderr, /^usage:/);
      assert.equal(help.code, 0, help.stderr);
      assert.match(help.stdout, /^usage:/);
      assert.ok(!existsSync(join(dataDir, 'pgdata')), 'a usage error created the database');
    });

    it('a bad email exits 2 before anything is opened', async () => {
      const bad = await run(CLI, ['superadmin', 'grant', 'nobody'], { DATA_DIR: dataDir });
      assert.equal(bad.code, 2, bad.stderr);
      assert.match(bad.stderr, /not a usable email address/);
      assert.equal(bad.stdout, '');
      assert.ok(!existsSync(join(dataDir, 'pgdata')), 'a usage error created the database');
    });

    it('superadmin grant with no server creates the user by email on a fresh folder; the second time says "already"', async () => {
      const first = await run(CLI, ['superadmin', 'grant', early], { DATA_DIR: dataDir });
      assert.equal(first.code, 0, first.stderr);
      assert.match(first.stdout, /is now a superadmin/);
      assert.doesNotMatch(first.stdout, /running server/);
      assert.ok(!existsSync(join(dataDir, 'embedded.lock')), 'the command left its lock behind');

      const second = await run(CLI, ['superadmin', 'grant', early.toUpperCase()], { DATA_DIR: dataDir });
      assert.equal(second.code, 0, second.stderr);
      assert.match(second.stdout, /already/);

      const rows = await readSuperadmin(dataDir, early);
      assert.equal(rows.length, 1, 'exactly one user row for the email');
      assert.equal(rows[0]!.email, early);
      assert.deepEqual(rows[0]!.roles, ['superadmin']);
      assert.equal(rows[0]!.grants, 1, 'one audit entry for the one grant');
    });

    it('npm start serves over real HTTP and prints how to get a token', async () => {
      server = await startServer(dataDir);
      assert.match(server.output(), /npm run -s token/);
      const res = await fetch(`${server.url}/health`);
      assert.equal(res.status, 200);
      assert.equal(((await res.json()) as any).checks.redis.status, 'not_configured');
    });

    it('the user granted before its first sign-in is a superadmin once it signs in', async () => {
      const issuer = await createDevIssuer({ dataDir, ...DEV });
      const me = await fetch(`${server!.url}/v1/me`, { headers: { authorization: `Bearer ${await issuer.sign(early)}` } });
      assert.equal(me.status, 200);
      const body = (await me.json()) as any;
      assert.equal(body.data.email, early);
      assert.equal(body.data.is_superadmin, true);
    });

    it('superadmin grant goes through the running server; a token from npm run token then is a superadmin on GET /v1/me', async () => {
      const email = uniqueEmail('root');
      const [res, tok] = await Promise.all([
        run(CLI, ['superadmin', 'grant', email], { DATA_DIR: dataDir }),
        run(TOKEN, [email], { DATA_DIR: dataDir }),
      ]);
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, /is now a superadmin/);
      assert.match(res.stdout, /through the running server/);
      assert.equal(tok.code, 0, tok.stderr);

      const me = await fetch(`${server!.url}/v1/me`, { headers: { authorization: `Bearer ${tok.stdout.trim()}` } });
      assert.equal(me.status, 200);
      const body = (await me.json()) as any;
      assert.equal(body.data.email, email);
      assert.equal(body.data.is_superadmin, true);

      const issuer = await createDevIssuer({ dataDir, ...DEV });
      const other = await fetch(`${server!.url}/v1/me`, { headers: { authorization: `Bearer ${await issuer.sign(uniqueEmail())}` } });
      assert.equal(other.status, 200);
      assert.equal(((await other.json()) as any).data.is_superadmin, false);
    });

    it('superadmin grant refuses a member of an organization and says what to do (spec 5 rule 6)', async () => {
      const issuer = await createDevIssuer({ dataDir, ...DEV });
      const su = { authorization: `Bearer ${await issuer.sign(early)}`, 'content-type': 'application/json' };
      const org = await fetch(`${server!.url}/v1/organizations`, {
        method: 'POST',
        headers: su,
        body: JSON.stringify({ name: 'CLI member clinic', slug: `cli-${Date.now().toString(36)}` }),
      });
      assert.equal(org.status, 201, await org.clone().text());
      const orgId = ((await org.json()) as any).data.id as string;
      const email = uniqueEmail('cli-member');
      const added = await fetch(`${server!.url}/v1/organizations/${orgId}/members`, {
        method: 'POST',
        headers: su,
        body: JSON.stringify({ email, role_code: 'specialist' }),
      });
      assert.equal(added.status, 201, await added.clone().text());

      const res = await run(CLI, ['superadmin', 'grant', email], { DATA_DIR: dataDir });
      assert.notEqual(res.code, 0, res.stdout);
      assert.match(res.stderr, /is a member of CLI member clinic/);
      assert.match(res.stderr, /Remove those memberships first/);
      const me = await fetch(`${server!.url}/v1/me`, { headers: { authorization: `Bearer ${await issuer.sign(email)}` } });
      assert.equal(((await me.json()) as any).data.is_superadmin, false);
    });

    it('a second server on the same DATA_DIR exits 1 naming the busy data folder, and the first keeps running', async () => {
      const res = await run(MAIN, [], { DATA_DIR: dataDir, ...(await servicePorts()), HOST: '127.0.0.1' });
      assert.equal(res.code, 1, res.stdout + res.stderr);
      assert.ok(res.stderr.includes(dataDir), `the message does not name ${dataDir}: ${res.stderr}`);
      assert.match(res.stderr, /in use/);
      assert.equal((await fetch(`${server!.url}/health`)).status, 200);
      assert.ok(existsSync(join(dataDir, 'embedded.lock')), "the refused start removed the running server's lock");
    });

    it('stops cleanly on SIGTERM and releases the data folder', async () => {
      assert.equal(await stop(server!.child, 'SIGTERM'), 0);
      assert.ok(!existsSync(join(dataDir, 'embedded.lock')), 'the lock file is still there');
    });

    it('a busy port is reported in one line, and the data folder is given back', async () => {
      const blocker = net.createServer();
      await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
      try {
        const port = (blocker.address() as net.AddressInfo).port;
        const res = await run(MAIN, [], { DATA_DIR: dataDir, ...(await servicePorts()), PORT: String(port), HOST: '127.0.0.1' });
        assert.equal(res.code, 1, res.stdout + res.stderr);
        assert.match(res.stderr, new RegExp(`port ${port} .*already in use.*PORT`));
        assert.doesNotMatch(res.stderr, /\n\s+at /, 'a stack trace instead of a message');
        assert.ok(!existsSync(join(dataDir, 'embedded.lock')), 'the failed start kept the data folder locked');
      } finally {
        await new Promise<void>((resolve) => blocker.close(() => resolve()));
      }
    });
  });

  describe('ports are checked before the database is opened', { concurrency: 1 }, () => {
    for (const setting of ['TELEMETRY_PORT', 'COMPOSER_PORT', 'WEB_PORT', 'DEV_OIDC_PORT'] as const) {
      it(`a busy ${setting} is named with its port, and no database was created`, async () => {
        const blocker = net.createServer();
        await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
        try {
          const port = (blocker.address() as net.AddressInfo).port;
          const dataDir = await tempDataDir();
          const res = await run(MAIN, [], { DATA_DIR: dataDir, ...(await servicePorts()), [setting]: String(port), HOST: '127.0.0.1' });
          assert.equal(res.code, 1, res.stdout + res.stderr);
          assert.match(res.stderr, new RegExp(`port ${port} .*already in use.*${setting}`));
          assert.ok(!existsSync(join(dataDir, 'pgdata')), 'the database was opened before the ports were checked');
        } finally {
          await new Promise<void>((resolve) => blocker.close(() => resolve()));
        }
      });
    }
  });

  describe('production guard', { concurrency: 1 }, () => {
    it('NODE_ENV=production without AUTH_JWKS_URL refuses to start: exit 1, about the development issuer', async () => {
      const res = await run(MAIN, [], { NODE_ENV: 'production', DATA_DIR: await tempDataDir(), ...(await servicePorts()) });
      assert.equal(res.code, 1, res.stdout + res.stderr);
      assert.match(res.stderr, /development issuer/);
      assert.match(res.stderr, /AUTH_JWKS_URL/);
      assert.doesNotMatch(res.stdout, /Core API/);
    });
  });
});
