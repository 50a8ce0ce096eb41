import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { TestDatabase } from '@clinic/db';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { startFakeClerk } from './fakes/clerk.ts';
import { startFakeS3 } from './fakes/s3.ts';
import { assertError, dataOf, freshDatabase, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';
import { type Clinic, PDF, setUpClinic, uploadTo } from './support/appointment-clinic.ts';

/*
 * Issue 29 defect 13: the identity and storage rows of the platform providers are what the running services use
 * (spec 2.11, 3.3, 5 "credential rotation"). Instances on ONE database: A writes the rows through the operator
 * API; B and C refresh their provider cache every 0.2 s (PROVIDER_CACHE_TTL_SECONDS, 5 minutes by default), B
 * with no grace for the identity provider it replaced, C with an hour of it. Nothing waits a fixed time: each
 * check polls the public surface until the instance shows the change, with a generous bound.
 */

const MASTER_KEYS = `k1:${Buffer.alloc(32, 7).toString('base64')}`;
const common = { MASTER_KEYS, RATELIMIT_API_LIMIT: '1000000' };

/** Polls `probe` until it returns true; fails after `timeoutMs` (generous: this bounds a hang, not a speed). */
async function eventually(what: string, probe: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`${what}: not seen within ${timeoutMs} ms`);
}

/** A Clerk-style identity provider: its Backend API (fake), signing key, keys of the row, and a token maker. */
async function clerkInstance(name: string) {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = randomUUID();
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  const secret = `sk_test_${name}${randomUUID().replace(/-/g, '')}`;
  const api = await startFakeClerk({ secretKeys: [secret], jwks: [jwk] });
  const host = `${name}.clerk.idp.test`;
  const issuer = `https://${host}`;
  const sign = (claims: Record<string, unknown>, key: CryptoKey = privateKey, keyId = kid) => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ iss: issuer, sub: `user_${randomUUID()}`, iat: now, exp: now + 600, ...claims })
      .setProtectedHeader({ alg: 'RS256', kid: keyId, typ: 'JWT' })
      .sign(key);
  };
  return {
    api,
    issuer,
    privateKey,
    kid,
    sign,
    /** A user of this instance (profile by the Backend API) and a session token for it without an email claim. */
    async user(email: string) {
      const sub = `user_${randomUUID()}`;
      api.users.set(sub, { email });
      return sign({ sub });
    },
    row: {
      credentials: {
        secret_key: secret,
        publishable_key: `pk_test_${Buffer.from(`${host}$`).toString('base64')}`,
        webhook_secret: `whsec_${Buffer.from(name.padEnd(12, 'x')).toString('base64')}`,
      },
      config: { endpoint_url: api.url },
    },
  };
}

describe('provider rotation reaches every instance (identity and storage rows)', () => {
  let database: TestDatabase;
  let a: TestApp;
  let b: TestApp;
  let c: TestApp;
  let su: string;
  let rows: Record<string, string>;

  before(async () => {
    database = await freshDatabase();
    a = await startTestApp({ database, env: { ...common, PROVIDER_CACHE_TTL_SECONDS: '3600' } });
    const others = { database, migrate: false, issuer: a.issuer };
    b = await startTestApp({ ...others, env: { ...common, PROVIDER_CACHE_TTL_SECONDS: '0.2', AUTH_ROTATION_GRACE_SECONDS: '0' } });
    c = await startTestApp({ ...others, env: { ...common, PROVIDER_CACHE_TTL_SECONDS: '0.2', AUTH_ROTATION_GRACE_SECONDS: '3600' } });
    su = await a.superadmin(uniqueEmail('rotation-su'));
    const list = dataOf(await a.call('GET', '/v1/admin/platform-service-providers', { token: su }));
    rows = Object.fromEntries(list.map((r: { capability: string; id: string }) => [r.capability, r.id]));
  });
  after(async () => {
    for (const t of [c, b, a]) await t?.close();
    await database?.drop();
  });

  const patch = (id: string, body: unknown, token = su) => a.call('PATCH', `/v1/admin/platform-service-providers/${id}`, { token, body });
  const me = (t: TestApp, token: string) => t.call('GET', '/v1/me', { token });
  const accepted = async (t: TestApp, token: string) => (await me(t, token)).statusCode === 200;

  describe('storage row', () => {
    let s3: Awaited<ReturnType<typeof startFakeS3>>;
    let clinic: Clinic;
    const OLD = { id: 'AKIAROTATIONOLD00001', secret: 'old-storage-secret-0001' };
    const NEW = { id: 'AKIAROTATIONNEW00002', secret: 'new-storage-secret-0002' };
    const storageBody = (key: typeof OLD, bucket: string) => ({
      credentials: { access_key_id: key.id, secret_access_key: key.secret },
      config: { bucket, region: 'eu-central-1', use_path_style: true, endpoint_url: s3.url },
    });
    const download = (t: TestApp, appointmentId: string, fileId: string) =>
      t.call('GET', `/v1/appointments/${appointmentId}/files/${fileId}`, { token: clinic.support, org: clinic.org.id });
    const keyOf = async (fileId: string) =>
      (await database.db.query<{ asset_key: string }>('select asset_key from appointment_files where id = $1', [fileId])).rows[0]!
        .asset_key;

    before(async () => {
      s3 = await startFakeS3({ keys: [OLD.id, NEW.id], region: 'eu-central-1', buckets: ['rotation-one', 'rotation-two'] });
      clinic = await setUpClinic(a, 'rotation');
    });
    after(async () => {
      // Back to the environment's store (the folder), so the identity tests below start from the bootstrap.
      await patch(rows.storage!, { status: 'inactive' });
      await s3?.close();
    });

    it('a storage row PATCHed on A: A writes to its bucket at once, B reads the file from there once its cache refreshes', async () => {
      const appt = await clinic.book();
      dataOf(await patch(rows.storage!, { ...storageBody(OLD, 'rotation-one'), status: 'active' }));
      const file = dataOf(await uploadTo(a, appt.id, clinic.support, clinic.org.id), 201);
      assert.ok(s3.buckets.get('rotation-one')!.has(await keyOf(file.id)), 'A stored the new file in the row bucket');
      assert.equal(s3.lastKeyId, OLD.id);
      // B started on the environment's folder, which does not have the file: it serves it once it follows the row.
      await eventually('B reads from the row bucket', async () => (await download(b, appt.id, file.id)).statusCode === 200);
      assert.deepEqual((await download(b, appt.id, file.id)).rawPayload, PDF);
    });

    it('rotated credentials, same bucket: B moves to the new key, and files written before the rotation stay readable', async () => {
      const appt = await clinic.book();
      const before = dataOf(await uploadTo(a, appt.id, clinic.support, clinic.org.id), 201);
      dataOf(await patch(rows.storage!, { credentials: { access_key_id: NEW.id, secret_access_key: NEW.secret } }));
      // The operator's order (docs/operations.md): revoke the old key only once every instance uses the new one.
      await eventually('B signs with the new key', async () => {
        const res = await download(b, appt.id, before.id);
        return res.statusCode === 200 && s3.lastKeyId === NEW.id;
      });
      s3.keys.delete(OLD.id);
      try {
        for (const t of [a, b]) assert.deepEqual((await download(t, appt.id, before.id)).rawPayload, PDF);
        const after = dataOf(await uploadTo(b, appt.id, clinic.support, clinic.org.id), 201);
        assert.ok(s3.buckets.get('rotation-one')!.has(await keyOf(after.id)));
        assert.equal(s3.lastKeyId, NEW.id);
      } finally {
        s3.keys.add(OLD.id);
      }
    });

    it('another bucket: new writes on B go there once it refreshes', async () => {
      const appt = await clinic.book();
      dataOf(await patch(rows.storage!, { config: { bucket: 'rotation-two' } }));
      await eventually('B writes to the new bucket', async () => {
        const file = dataOf(await uploadTo(b, appt.id, clinic.support, clinic.org.id), 201);
        return s3.buckets.get('rotation-two')!.has(await keyOf(file.id));
      });
    });
  });

  describe('identity row', () => {
    let one: Awaited<ReturnType<typeof clerkInstance>>;
    let two: Awaited<ReturnType<typeof clerkInstance>>;

    before(async () => {
      [one, two] = await Promise.all([clerkInstance('one'), clerkInstance('two')]);
    });
    after(async () => {
      await one?.api.close();
      await two?.api.close();
    });

    it('a publishable key that names no frontend API (the issuer of its tokens) is refused with 400', async () => {
      const bad = { ...one.row, credentials: { ...one.row.credentials, publishable_key: 'pk_test_guard1234567890' } };
      const err = assertError(await patch(rows.auth!, { ...bad, status: 'active' }), 400, 'validation_error');
      assert.ok(err.fields['credentials.publishable_key'], JSON.stringify(err));
      assert.equal(dataOf(await a.call('GET', `/v1/admin/platform-service-providers/${rows.auth}`, { token: su })).status, 'inactive');
    });

    it('before any row the environment (here the development issuer) verifies tokens on every instance', async () => {
      for (const t of [a, b, c]) {
        assert.equal((await me(t, await a.token(uniqueEmail('bootstrap')))).statusCode, 200);
        assertError(await me(t, await one.user(uniqueEmail('early'))), 401, 'unauthorized');
      }
    });

    it('the identity row PATCHed on A: B verifies its tokens and looks profiles up there; B refuses the environment tokens, C still takes them (grace)', async () => {
      dataOf(await patch(rows.auth!, { ...one.row, status: 'active' }));
      const email = uniqueEmail('one-user');
      const token = await one.user(email);
      await eventually('B takes tokens of the row provider', () => accepted(b, token));
      // No email claim in the token: the email came from the row's Backend API with the row's secret key.
      assert.equal(dataOf(await me(b, token)).email, email);
      assertError(await me(b, await a.token(uniqueEmail('env'))), 401, 'unauthorized');
      await eventually('C takes tokens of the row provider', () => accepted(c, token));
      assert.equal(
        (await me(c, await a.token(uniqueEmail('env-grace')))).statusCode,
        200,
        'C accepts the replaced provider during its grace',
      );
      // A (the writer) dropped its cache at once; its default grace (AUTH_ROTATION_GRACE_SECONDS, 10 minutes) keeps su in.
      assert.equal((await me(a, token)).statusCode, 200);
      assert.equal((await me(a, su)).statusCode, 200);
    });

    it('rotation to another instance of the provider: B verifies the new one and refuses what only the old one signed', async () => {
      // The operator signs in with the provider in use (su's development token is past A's grace once A switches again).
      const opEmail = uniqueEmail('rotation-op');
      const op = await a.superadmin(opEmail);
      assert.ok(op);
      const opToken = await one.user(opEmail);
      assert.equal((await me(a, opToken)).statusCode, 200);
      dataOf(await patch(rows.auth!, two.row, opToken));

      const fresh = await two.user(uniqueEmail('two-user'));
      await eventually('B takes tokens of the new provider', () => accepted(b, fresh));
      const oldOnly = await one.user(uniqueEmail('one-late'));
      assertError(await me(b, oldOnly), 401, 'unauthorized');
      // The new issuer's claims signed with the old instance's key: the keys are the new provider's too.
      const forged = await two.sign({ email: uniqueEmail('forged') }, one.privateKey, one.kid);
      assertError(await me(b, forged), 401, 'unauthorized');
      // The old secret key no longer reaches anything: B's look-ups use the new one.
      one.api.secretKeys.clear();
      assert.equal((await me(b, await two.user(uniqueEmail('two-second')))).statusCode, 200);

      await eventually('C takes tokens of the new provider', () => accepted(c, fresh));
      one.api.secretKeys.add(one.row.credentials.secret_key);
      assert.equal((await me(c, await one.user(uniqueEmail('one-grace')))).statusCode, 200, 'C: the replaced provider, in its grace');
    });

    it('the row set inactive: the environment settings verify again on every instance', async () => {
      const opEmail = uniqueEmail('rotation-op2');
      await a.superadmin(opEmail);
      const opToken = await two.user(opEmail);
      dataOf(await patch(rows.auth!, { status: 'inactive' }, opToken));
      const env = await a.token(uniqueEmail('env-again'));
      await eventually('B takes environment tokens again', () => accepted(b, env));
      assertError(await me(b, await two.user(uniqueEmail('two-after'))), 401, 'unauthorized');
    });
  });
});
