import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { readAll } from '@clinic/assets';
import { createServiceLogger } from '@clinic/http-kit';
import type { FastifyInstance } from 'fastify';
import { decodeJwt } from 'jose';
import { pino } from 'pino';
import { buildTelemetryApp, createSessionTokenVerifier } from '@clinic/telemetry';
import { decodeReplay, encodeBatchGzip } from '../../telemetry/src/pose/format.ts';
import { generateSession, toBatches } from '../../telemetry/src/synthetic/generator.ts';
import { buildApp } from '../src/app.ts';
import { sessionSigner } from '../src/modules/exercise-sessions/token.ts';
import { createLogger, createRuntime, type Runtime } from '../src/platform/runtime.ts';
import { assertError, dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

/*
 * The replay download link: GET /v1/exercise-sessions/{id}/replay answers
 * { url, expires_at } with url = /v1/public/telemetry/replays/{id}?token=<JWT>. The token is bound to
 * the session id and expires; a token that is altered, for another session, past its expiry, or signed
 * for another purpose with the same key, is 403; and the access log never writes the token.
 *
 * Two core API instances on one database and one configuration (so one signing key): `t` for the setup,
 * and `logged`, whose logger is the services' own (createServiceLogger) writing at info level into this
 * file, where the lines are read. Replays are real: pose batches sent to a telemetry instance, then ended.
 */
describe('the replay download link', () => {
  let t: TestApp;
  let logged: { rt: Runtime; app: FastifyInstance };
  let telemetry: FastifyInstance;
  const lines: string[] = [];
  let orgId: string;
  let patient: { token: string; userId: string };
  /** Two ended sessions of the patient, each with its replay and the frames it was sent. */
  const sessions: { id: string; sessionToken: string; frames: number }[] = [];
  let requestNo = 0;

  before(async () => {
    t = await startTestApp({ env: { RATELIMIT_API_LIMIT: '100000' } });
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    const rt = await createRuntime(t.config, {
      db: t.db,
      devIssuer: t.issuer,
      skipMigrations: true,
      logger: createServiceLogger({ level: 'info' }, sink),
    });
    logged = { rt, app: await buildApp(rt) };
    await logged.app.ready();
    // The telemetry service writes replays where `logged` reads them (its asset store).
    const signer = await sessionSigner(t.config);
    telemetry = await buildTelemetryApp({
      db: t.db,
      assets: rt.assets,
      logger: t.rt.logger,
      userTokens: t.rt.verifier,
      sessionTokens: createSessionTokenVerifier(signer.keys),
      redis: t.rt.redis,
      redisKeyPrefix: t.config.redisKeyPrefix,
    });

    const su = await t.superadmin();
    orgId = (await t.createOrg({ name: 'Replay clinic' })).id;
    patient = await t.addPatient(orgId, uniqueEmail('replay-patient'));
    const version = dataOf(
      await t.call('POST', '/v1/admin/consent-purposes/biometric/versions', {
        token: su,
        body: { body_translations: { en: 'Biometric telemetry' } },
      }),
      201,
    ).version;
    dataOf(
      await t.call('POST', '/v1/me/consents', {
        token: patient.token,
        body: { grants: [{ organization_id: orgId, purpose_code: 'biometric', purpose_version: version, source: 'self_toggle' }] },
      }),
      201,
    );
    const { rows } = await t.db.query<{ id: string }>(`select id from exercises where slug = 'squat'`);
    for (const seed of [3, 5]) {
      const started = dataOf(
        await t.call('POST', '/v1/exercise-sessions', { token: patient.token, org: orgId, body: { exercise_id: rows[0]!.id } }),
        201,
      );
      const g = generateSession({ kind: 'squat', scenario: 'clean', reps: 2, seed });
      const auth = { authorization: `Bearer ${started.session_token}` };
      for (const batch of toBatches(g)) {
        const res = await telemetry.inject({
          method: 'POST',
          url: '/v1/pose/frames',
          headers: { ...auth, 'content-type': 'application/octet-stream' },
          payload: encodeBatchGzip(batch),
        });
        assert.equal(res.statusCode, 201, res.body);
      }
      const end = await telemetry.inject({ method: 'POST', url: `/v1/sessions/${started.id}/end`, headers: auth });
      assert.equal(end.json().data?.replay_available, true, end.body);
      sessions.push({ id: started.id, sessionToken: started.session_token, frames: g.timestamps.length });
    }
  });
  after(async () => {
    await telemetry?.close();
    await logged?.app.close();
    await logged?.rt.close();
    await t?.close();
  });

  /** A fresh link for a session, issued by the logged instance to the patient who owns it. */
  async function issue(sessionId: string) {
    const res = await logged.app.inject({
      method: 'GET',
      url: `/v1/exercise-sessions/${sessionId}/replay`,
      headers: { authorization: `Bearer ${patient.token}`, 'x-organization-id': orgId },
    });
    const data = dataOf(res) as { url: string; expires_at: string };
    const url = new URL(data.url);
    assert.equal(url.pathname, `/v1/public/telemetry/replays/${sessionId}`);
    const token = url.searchParams.get('token');
    assert.ok(token, data.url);
    return { path: url.pathname, token, expiresAt: new Date(data.expires_at) };
  }
  /** Downloads without credentials other than the token; `id` names the request, to find its log lines. */
  async function download(sessionId: string, token: string) {
    const id = `replay-request-${++requestNo}`;
    const res = await logged.app.inject({
      method: 'GET',
      url: `/v1/public/telemetry/replays/${sessionId}?token=${encodeURIComponent(token)}`,
      headers: { 'x-request-id': id },
    });
    return Object.assign(res, { requestId: id, token });
  }
  /** Every log line of a request, parsed: the access log ("incoming request", "request completed") and the rest. */
  const logOf = (requestId: string) => lines.map((l) => JSON.parse(l)).filter((l) => l.reqId === requestId);
  /** The token with one character of a part replaced: 0 header, 1 payload, 2 signature. */
  const altered = (token: string, part: number) => {
    const parts = token.split('.');
    const p = parts[part]!;
    const at = Math.floor(p.length / 2);
    parts[part] = p.slice(0, at) + (p[at] === 'A' ? 'B' : 'A') + p.slice(at + 1);
    return parts.join('.');
  };
  const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');

  it('works once issued: 200 with the gzip replay of every frame sent, not cached', async () => {
    const [s] = sessions;
    const link = await issue(s!.id);
    const res = await download(s!.id, link.token);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['content-type'], 'application/gzip');
    assert.equal(res.headers['cache-control'], 'private, no-store');
    const body = res.rawPayload;
    assert.deepEqual([...body.subarray(0, 2)], [0x1f, 0x8b], 'a gzip stream');
    assert.ok(gunzipSync(body).length > 0);
    assert.equal(
      decodeReplay(body).reduce((n, b) => n + b.timestamps.length, 0),
      s!.frames,
    );
    const { rows } = await t.db.query<{ replay_key: string }>('select replay_key from exercise_sessions where id = $1', [s!.id]);
    assert.deepEqual(body, await readAll((await logged.rt.assets.get(rows[0]!.replay_key))!), 'the stored blob, byte for byte');
  });

  it("one session's token does not open another session's replay: 403", async () => {
    const [a, b] = sessions;
    const forA = await issue(a!.id);
    // B's replay exists and its own link opens it: the 403 below is the binding, not a missing blob.
    assert.equal((await download(b!.id, (await issue(b!.id)).token)).statusCode, 200);
    assertError(await download(b!.id, forA.token), 403, 'forbidden');
  });

  it('expires: the issued token is 403 once its expires_at has passed, and 200 a second before', async (ctx) => {
    const [s] = sessions;
    const link = await issue(s!.id);
    // The link says when it expires, and the token carries that expiry (the signer reads Date.now()).
    assert.equal(decodeJwt(link.token).exp, link.expiresAt.getTime() / 1000);
    assert.equal(link.expiresAt.getTime() - Date.now() > 60_000, true, 'valid for minutes, not seconds');
    // Move the clock instead of waiting: only Date is mocked; node:test restores it after this test.
    ctx.mock.timers.enable({ apis: ['Date'], now: link.expiresAt.getTime() - 1000 });
    assert.equal((await download(s!.id, link.token)).statusCode, 200, 'a second before expiry');
    ctx.mock.timers.setTime(link.expiresAt.getTime() + 1000);
    assertError(await download(s!.id, link.token), 403, 'forbidden');
    ctx.mock.timers.reset();
    assert.equal((await download(s!.id, link.token)).statusCode, 200, 'the clock back: the same token works again');
  });

  it('a tampered token is 403: any part changed, claims rewritten, alg none, or a session token signed with the same key', async () => {
    const [a, b] = sessions;
    const { token } = await issue(a!.id);
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const claims = decodeJwt(token);
    const tampered = {
      header: altered(token, 0),
      payload: altered(token, 1),
      signature: altered(token, 2),
      'signature dropped': `${header}.${payload}.`,
      // The claims of B with A's signature: the signature no longer matches.
      'claims rewritten for another session': `${header}.${b64({ ...claims, sid: b!.id })}.${signature}`,
      'claims rewritten to expire later': `${header}.${b64({ ...claims, exp: Number(claims.exp) + 86_400 })}.${signature}`,
      'alg none': `${b64({ alg: 'none', typ: 'JWT' })}.${payload}.`,
    };
    for (const [what, forged] of Object.entries(tampered)) {
      assert.notEqual(forged, token, what);
      assertError(await download(a!.id, forged), 403, 'forbidden');
    }
    // The exercise-session token is signed with the same key and carries the same sid: its audience
    // (telemetry ingestion, not replay download) is what refuses it.
    assert.equal(decodeJwt(a!.sessionToken).sid, a!.id);
    assertError(await download(a!.id, a!.sessionToken), 403, 'forbidden');
    assert.equal((await download(a!.id, token)).statusCode, 200, 'the untouched token still works');
  });

  it('the access log of a download writes the URL with the token redacted, never the token', async () => {
    const [s] = sessions;
    const { token } = await issue(s!.id);
    for (const res of [await download(s!.id, token), await download(s!.id, altered(token, 2))]) {
      const own = logOf(res.requestId);
      const incoming = own.find((l) => l.msg === 'incoming request');
      assert.ok(incoming, `the access log has the request: ${JSON.stringify(own)}`);
      assert.equal(incoming.req.url, `/v1/public/telemetry/replays/${s!.id}?token=[redacted]`);
      assert.ok(
        own.some((l) => l.msg === 'request completed' && l.res?.statusCode === res.statusCode),
        JSON.stringify(own),
      );
      const signature = res.token.split('.')[2]!;
      for (const line of own) assert.ok(!JSON.stringify(line).includes(signature), `a log line holds the token: ${JSON.stringify(line)}`);
    }
    // Nor anywhere else in this instance's log: no token issued or presented in this file appears.
    const all = lines.join('\n');
    for (const s of sessions) assert.ok(!all.includes(s.sessionToken.split('.')[2]!), 'a session token in the log');
    assert.ok(!all.includes(token.split('.')[2]!), 'a replay token in the log');
    // The runtime's own logger (what `npm start` writes to stdout) is built the same way: its request
    // serializer redacts the URL too.
    const serializers = (createLogger(t.config) as unknown as Record<symbol, Record<string, (r: object) => { url: string }>>)[
      pino.symbols.serializersSym
    ]!;
    assert.equal(serializers.req!({ method: 'GET', url: `/r/1?token=${token}&page=2` }).url, '/r/1?token=[redacted]&page=2');
  });
});
