import type { AssetStore } from '@clinic/assets';
import type { FastifyInstance } from 'fastify';
import { createRemoteJWKSet } from 'jose';
import { startTestApp, uniqueEmail, type TestApp } from '../../core-api/test/helpers.ts';
import { sessionSigner } from '../../core-api/src/modules/exercise-sessions/token.ts';
import { buildTelemetryApp, type TelemetryDeps } from '../src/app.ts';
import { encodeBatchGzip } from '../src/pose/format.ts';
import { createSessionTokenVerifier } from '../src/tokens.ts';

/**
 * A core API (listening on loopback, for its JWKS) and two telemetry instances on the same database:
 * A verifies session tokens with the keys in memory (the embedded companion's way), B fetches the
 * core's JWKS over HTTP (production's way).
 */
export interface World {
  t: TestApp;
  a: FastifyInstance;
  b: FastifyInstance;
  assets: AssetStore;
  orgId: string;
  su: string;
  patient: { token: string; userId: string };
  versions: Record<'biometric' | 'analytics', number>;
  exerciseId(slug: string): Promise<string>;
  /** Grants the purpose at the world's organization, or at `orgId` (another clinic). */
  grant(purpose: 'biometric' | 'analytics', token?: string, orgId?: string): Promise<string>;
  withdraw(consentId: string, token?: string): Promise<void>;
  start(token?: string, slug?: string, orgId?: string): Promise<{ id: string; token: string }>;
  pose(
    app: FastifyInstance,
    token: string,
    batch: Parameters<typeof encodeBatchGzip>[0] | Buffer,
  ): Promise<{ statusCode: number; body: string; headers: Record<string, unknown>; json(): any }>;
  /** One more instance like A (keys in memory) with some settings changed; closed with the world. */
  instance(overrides: Partial<TelemetryDeps>): Promise<FastifyInstance>;
  close(): Promise<void>;
}

/** `telemetry`: settings of both instances (the benchmark lifts the per-session rate limit). */
export async function startWorld(opts: { telemetry?: Partial<Pick<TelemetryDeps, 'poseRateLimit'>> } = {}): Promise<World> {
  const t = await startTestApp({ env: { RATELIMIT_API_LIMIT: '100000' } });
  // The runtime's store (a temporary folder in tests, removed when the app closes), shared with telemetry.
  const assets = t.rt.assets;
  const coreUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
  const signer = await sessionSigner(t.rt.config);
  // Services mode: the pose rate limiter counts in Redis under the test's own REDIS_KEY_PREFIX.
  const redis = { redis: t.rt.redis, redisKeyPrefix: t.rt.config.redisKeyPrefix };
  const common = { db: t.db, assets, logger: t.rt.logger, userTokens: t.rt.verifier, ...redis, ...opts.telemetry };
  const a = await buildTelemetryApp({ ...common, sessionTokens: createSessionTokenVerifier(signer.keys) });
  const extra: FastifyInstance[] = [];
  const b = await buildTelemetryApp({
    ...common,
    sessionTokens: createSessionTokenVerifier(createRemoteJWKSet(new URL(`${coreUrl}/v1/public/telemetry/jwks.json`))),
  });
  const su = await t.superadmin();
  const org = await t.createOrg();
  const patient = await t.addPatient(org.id, uniqueEmail('patient'));
  const versions = { biometric: 0, analytics: 0 };
  for (const code of ['biometric', 'analytics'] as const) {
    const res = await t.call('POST', `/v1/admin/consent-purposes/${code}/versions`, {
      token: su,
      body: { body_translations: { en: `${code} text` } },
    });
    if (res.statusCode !== 201) throw new Error(res.body);
    versions[code] = res.json().data.version;
  }
  const w: World = {
    t,
    a,
    b,
    assets,
    orgId: org.id,
    su,
    patient,
    versions,
    async exerciseId(slug) {
      const { rows } = await t.db.query<{ id: string }>('select id from exercises where slug = $1', [slug]);
      return rows[0]!.id;
    },
    async grant(purpose, token = patient.token, orgId = org.id) {
      const res = await t.call('POST', '/v1/me/consents', {
        token,
        body: { grants: [{ organization_id: orgId, purpose_code: purpose, purpose_version: versions[purpose], source: 'self_toggle' }] },
      });
      if (res.statusCode !== 201) throw new Error(res.body);
      return res.json().data[0].id;
    },
    async withdraw(id, token = patient.token) {
      const res = await t.call('POST', `/v1/me/consents/${id}/withdraw`, { token, body: {} });
      if (res.statusCode !== 200) throw new Error(res.body);
    },
    async start(token = patient.token, slug = 'squat', orgId = org.id) {
      const res = await t.call('POST', '/v1/exercise-sessions', { token, org: orgId, body: { exercise_id: await w.exerciseId(slug) } });
      if (res.statusCode !== 201) throw new Error(res.body);
      return { id: res.json().data.id, token: res.json().data.session_token };
    },
    async pose(app, token, batch) {
      const payload = Buffer.isBuffer(batch) ? batch : encodeBatchGzip(batch);
      return app.inject({
        method: 'POST',
        url: '/v1/pose/frames',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream' },
        payload,
      });
    },
    async instance(overrides) {
      const app = await buildTelemetryApp({ ...common, sessionTokens: createSessionTokenVerifier(signer.keys), ...overrides });
      extra.push(app);
      return app;
    },
    async close() {
      for (const app of extra) await app.close();
      await a.close();
      await b.close();
      await t.close();
    },
  };
  return w;
}
