// Authentication (spec 5.1) and just-in-time provisioning (spec 5.4) through HTTP, checked against
// the database as the app sees it. Every test uses fresh emails, so tests do not depend on each other.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { NIL_UUID } from '@clinic/db';
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload } from 'jose';
import { resolveContext } from '../src/platform/identity/service.ts';
import { createDevIssuer, devSubject, type DevIssuer } from '../src/platform/auth/dev-issuer.ts';
import { startTestApp, uniqueEmail, type TestApp, assertError } from './helpers.ts';

const ISSUER = 'clinic-platform-dev-issuer';
const AUDIENCE = 'clinic-platform';

/** A development issuer whose private key the tests hold, so they can craft any token with the app's own key. */
async function craftingIssuer(): Promise<
  DevIssuer & { kid: string; craft(claims: JWTPayload, header?: Record<string, unknown>): Promise<string> }
> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = randomUUID();
  const publicJwk: JWK = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  const jwks = { keys: [publicJwk] };
  const craft = (claims: JWTPayload, header: Record<string, unknown> = {}) =>
    new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT', ...header }).sign(privateKey);
  const now = () => Math.floor(Date.now() / 1000);
  return {
    issuer: ISSUER,
    acceptedIssuers: [ISSUER],
    audience: AUDIENCE,
    privateJwk: { ...(await exportJWK(privateKey)), kid, alg: 'RS256' },
    jwks,
    keys: createLocalJWKSet(jwks),
    kid,
    craft,
    sign(email, opts = {}) {
      const normalized = email.trim().toLowerCase();
      return craft({
        email: normalized,
        iss: ISSUER,
        aud: AUDIENCE,
        sub: opts.subject ?? devSubject(normalized),
        iat: now(),
        exp: now() + (opts.expiresInSeconds ?? 3600),
      });
    },
  };
}

const b64url = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

function validClaims(email: string): JWTPayload {
  const now = Math.floor(Date.now() / 1000);
  return { email, iss: ISSUER, aud: AUDIENCE, sub: devSubject(email), iat: now, exp: now + 3600 };
}

describe('identity: authentication and just-in-time provisioning', () => {
  let t: TestApp;
  let issuer: Awaited<ReturnType<typeof craftingIssuer>>;

  before(async () => {
    issuer = await craftingIssuer();
    t = await startTestApp({ issuer });
  });
  after(() => t.close());

  const usersWithEmail = async (email: string) =>
    (
      await t.db.query<{ id: string; external_subject: string | null; email: string; confirmed: boolean; last_activity: Date | null }>(
        'select id, external_subject, email, confirmed, last_activity from users where lower(email) = lower($1)',
        [email],
      )
    ).rows;
  const auditRows = async (action: string, entityId: string) =>
    (
      await t.db.query<{ organization_id: string | null; actor_user_id: string | null; entity_type: string; entity_id: string; data: any }>(
        'select organization_id, actor_user_id, entity_type, entity_id, data from audit_logs where action = $1 and entity_id = $2',
        [action, entityId],
      )
    ).rows;
  const auditCountForActor = async (userId: string) =>
    (await t.db.query<{ n: number }>('select count(*)::int as n from audit_logs where actor_user_id = $1', [userId])).rows[0]!.n;

  describe('bearer token verification (spec 5.1)', () => {
    it('a protected route without Authorization returns 401 unauthorized', async () => {
      assertError(await t.call('GET', '/v1/me'), 401, 'unauthorized');
      assertError(await t.call('GET', `/v1/organizations/${randomUUID()}`), 401, 'unauthorized');
      assertError(await t.call('PUT', '/v1/me/switch-organization', { body: { organization_id: randomUUID() } }), 401, 'unauthorized');
      // Authentication comes before body validation: an anonymous caller learns nothing about the body.
      assertError(await t.call('POST', '/v1/organizations', { body: { nonsense: true } }), 401, 'unauthorized');
    });

    it('a non-Bearer scheme or an empty bearer returns 401 unauthorized', async () => {
      const good = await issuer.sign(uniqueEmail());
      assertError(await t.call('GET', '/v1/me', { headers: { authorization: `Basic ${good}` } }), 401, 'unauthorized');
      assertError(await t.call('GET', '/v1/me', { headers: { authorization: 'Bearer ' } }), 401, 'unauthorized');
      assertError(await t.call('GET', '/v1/me', { headers: { authorization: good } }), 401, 'unauthorized');
    });

    it('malformed tokens return 401 unauthorized', async () => {
      for (const bad of ['not-a-jwt', 'a.b.c', 'a.b', `${b64url({ alg: 'RS256' })}.${b64url({ sub: 'x' })}.c2lnbmF0dXJl`]) {
        assertError(await t.call('GET', '/v1/me', { token: bad }), 401, 'unauthorized');
      }
    });

    it('a token signed by another key returns 401, with an unknown kid and with the kid of the real key', async () => {
      const email = uniqueEmail();
      const stranger = await createDevIssuer({ dataDir: null, issuer: ISSUER, audience: AUDIENCE });
      assertError(await t.call('GET', '/v1/me', { token: await stranger.sign(email) }), 401, 'unauthorized');
      // Same kid, same claims, another private key: only the signature can tell.
      const { privateKey } = await generateKeyPair('RS256');
      const forged = await new SignJWT(validClaims(email))
        .setProtectedHeader({ alg: 'RS256', kid: issuer.kid, typ: 'JWT' })
        .sign(privateKey);
      assertError(await t.call('GET', '/v1/me', { token: forged }), 401, 'unauthorized');
      assert.equal((await usersWithEmail(email)).length, 0);
    });

    it('a token whose payload was changed after signing returns 401', async () => {
      const victim = uniqueEmail('victim');
      const [h, , s] = (await issuer.sign(uniqueEmail())).split('.');
      const tampered = `${h}.${b64url(validClaims(victim))}.${s}`;
      assertError(await t.call('GET', '/v1/me', { token: tampered }), 401, 'unauthorized');
      assert.equal((await usersWithEmail(victim)).length, 0);
    });

    it('an expired token returns 401 unauthorized', async () => {
      const email = uniqueEmail();
      assertError(await t.call('GET', '/v1/me', { token: await issuer.sign(email, { expiresInSeconds: -120 }) }), 401, 'unauthorized');
      assert.equal((await usersWithEmail(email)).length, 0);
    });

    it('an expired token is refused even after the same identity was verified with a valid one', async () => {
      const email = uniqueEmail();
      assert.equal((await t.call('GET', '/v1/me', { token: await issuer.sign(email) })).statusCode, 200);
      assertError(await t.call('GET', '/v1/me', { token: await issuer.sign(email, { expiresInSeconds: -120 }) }), 401, 'unauthorized');
    });

    it('an unsigned token (alg none) returns 401 unauthorized', async () => {
      const email = uniqueEmail();
      for (const header of [{ alg: 'none' }, { alg: 'none', typ: 'JWT', kid: issuer.kid }, { alg: 'None' }]) {
        const token = `${b64url(header)}.${b64url(validClaims(email))}.`;
        assertError(await t.call('GET', '/v1/me', { token }), 401, 'unauthorized');
      }
      assert.equal((await usersWithEmail(email)).length, 0);
    });

    it('an HMAC token keyed with the public key (algorithm confusion) returns 401', async () => {
      const email = uniqueEmail();
      const secret = new TextEncoder().encode(JSON.stringify(issuer.jwks.keys[0]));
      const token = await new SignJWT(validClaims(email)).setProtectedHeader({ alg: 'HS256', kid: issuer.kid }).sign(secret);
      assertError(await t.call('GET', '/v1/me', { token }), 401, 'unauthorized');
    });

    it('the right key with the wrong issuer, wrong audience, no subject or no expiry returns 401', async () => {
      const email = uniqueEmail();
      const claims = validClaims(email);
      const { sub: _sub, ...noSub } = claims;
      const { exp: _exp, ...noExp } = claims;
      for (const bad of [
        { ...claims, iss: 'https://evil.example' },
        { ...claims, aud: 'another-api' },
        noSub,
        noExp,
        { ...claims, nbf: claims.exp },
      ]) {
        assertError(await t.call('GET', '/v1/me', { token: await issuer.craft(bad) }), 401, 'unauthorized');
      }
      assert.equal((await usersWithEmail(email)).length, 0);
      // The same claims untouched are accepted: the refusals above are the claim checks.
      assert.equal((await t.call('GET', '/v1/me', { token: await issuer.craft(claims) })).statusCode, 200);
    });

    it('a valid token without an email claim returns 401 and provisions nothing', async () => {
      const sub = `no-email-${randomUUID()}`;
      const now = Math.floor(Date.now() / 1000);
      const token = await issuer.craft({ iss: ISSUER, aud: AUDIENCE, sub, iat: now, exp: now + 600 });
      assertError(await t.call('GET', '/v1/me', { token }), 401, 'unauthorized');
      const { rows } = await t.db.query('select 1 from users where external_subject = $1', [sub]);
      assert.equal(rows.length, 0);
    });

    it('public routes need no token', async () => {
      assert.equal((await t.call('GET', '/health')).statusCode, 200);
      assert.equal((await t.call('GET', '/v1/public/system-info')).statusCode, 200);
    });
  });

  describe('just-in-time provisioning (spec 5.4)', () => {
    it('the first request creates one user row with the token email and one user.provisioned audit entry', async () => {
      const email = uniqueEmail('first');
      const res = await t.call('GET', '/v1/me', { as: email });
      assert.equal(res.statusCode, 200);
      const me = res.json().data;
      assert.equal(me.email, email);
      const users = await usersWithEmail(email);
      assert.equal(users.length, 1);
      assert.equal(users[0]!.id, me.id);
      assert.equal(users[0]!.external_subject, devSubject(email));
      assert.equal(users[0]!.email, email);
      const audit = await auditRows('user.provisioned', me.id);
      assert.equal(audit.length, 1);
      assert.equal(audit[0]!.organization_id, null);
      assert.equal(audit[0]!.actor_user_id, me.id);
      assert.equal(audit[0]!.entity_type, 'user');
      // Later requests find the user: no second row, no second entry.
      for (let i = 0; i < 3; i++) assert.equal((await t.call('GET', '/v1/me', { as: email })).json().data.id, me.id);
      assert.equal((await usersWithEmail(email)).length, 1);
      assert.equal((await auditRows('user.provisioned', me.id)).length, 1);
    });

    it('the email is stored lower-cased and trimmed as the token carries it', async () => {
      const email = uniqueEmail('MiXeD');
      const res = await t.call('GET', '/v1/me', {
        token: await issuer.craft({ ...validClaims(email.toLowerCase()), email: `  ${email.toUpperCase()} ` }),
      });
      assert.equal(res.statusCode, 200);
      assert.equal(res.json().data.email, email.toLowerCase());
    });

    it('20 concurrent first requests of one identity all succeed and create exactly one user and one audit entry', async () => {
      const email = uniqueEmail('race');
      const token = await issuer.sign(email);
      const responses = await Promise.all(Array.from({ length: 20 }, () => t.call('GET', '/v1/me', { token })));
      assert.deepEqual(
        responses.map((r) => r.statusCode),
        Array(20).fill(200),
        responses.find((r) => r.statusCode !== 200)?.body,
      );
      const ids = new Set(responses.map((r) => r.json().data.id));
      assert.equal(ids.size, 1);
      const users = await usersWithEmail(email);
      assert.equal(users.length, 1);
      assert.ok(ids.has(users[0]!.id));
      assert.equal((await auditRows('user.provisioned', users[0]!.id)).length, 1);
    });

    it('concurrent first requests of different tokens (same identity) also create one user', async () => {
      const email = uniqueEmail('race2');
      // Distinct tokens defeat the verified-token cache: each request verifies and provisions on its own.
      const tokens = await Promise.all(Array.from({ length: 10 }, (_, i) => issuer.craft({ ...validClaims(email), jti: `j${i}` })));
      const responses = await Promise.all(tokens.map((token) => t.call('GET', '/v1/me', { token })));
      assert.deepEqual(
        responses.map((r) => r.statusCode),
        Array(10).fill(200),
      );
      const users = await usersWithEmail(email);
      assert.equal(users.length, 1);
      assert.equal((await auditRows('user.provisioned', users[0]!.id)).length, 1);
    });

    it('a failed provisioning audit insert does not stop the request (best effort, spec 5.4.3)', async () => {
      const email = uniqueEmail('audit-down');
      await t.db.exec(`
        create function test_fail_provision_audit() returns trigger language plpgsql as
          $$ begin raise exception 'audit store unavailable (test)'; end $$;
        create trigger fail_provision_audit before insert on audit_logs for each row
          when (new.action = 'user.provisioned') execute function test_fail_provision_audit();`);
      try {
        const res = await t.call('GET', '/v1/me', { as: email });
        assert.equal(res.statusCode, 200, res.body);
        const users = await usersWithEmail(email);
        assert.equal(users.length, 1);
        assert.equal((await auditRows('user.provisioned', users[0]!.id)).length, 0);
      } finally {
        await t.db.exec(`drop trigger fail_provision_audit on audit_logs; drop function test_fail_provision_audit();`);
      }
    });

    it('last_activity is set by the first request', async () => {
      const email = uniqueEmail('active');
      const before = Date.now();
      const me = (await t.call('GET', '/v1/me', { as: email })).json().data;
      assert.notEqual(me.last_activity, null);
      const at = Date.parse(me.last_activity);
      assert.ok(Math.abs(at - before) < 60_000, `last_activity ${me.last_activity} is not about now`);
      const [row] = await usersWithEmail(email);
      assert.ok(row!.last_activity instanceof Date || typeof row!.last_activity === 'string');
      assert.notEqual(row!.last_activity, null);
    });

    it('a user row created by email before the first sign-in is linked: same id, subject set, user.linked audit', async () => {
      const email = uniqueEmail('invited');
      // Created as an invitation or CLI grant would: by email, mixed case, no identity yet.
      const { rows } = await t.db.query<{ id: string }>('insert into users (email) values ($1) returning id', [email.toUpperCase()]);
      const preId = rows[0]!.id;
      const res = await t.call('GET', '/v1/me', { as: email });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.id, preId);
      const users = await usersWithEmail(email);
      assert.equal(users.length, 1);
      assert.equal(users[0]!.id, preId);
      assert.equal(users[0]!.external_subject, devSubject(email));
      assert.equal(users[0]!.confirmed, true);
      assert.equal((await auditRows('user.linked', preId)).length, 1);
      assert.equal((await auditRows('user.provisioned', preId)).length, 0);
      // Signing in again changes nothing.
      assert.equal((await t.call('GET', '/v1/me', { as: email })).json().data.id, preId);
      assert.equal((await auditRows('user.linked', preId)).length, 1);
    });

    it('concurrent first sign-ins of a pre-created user link it once', async () => {
      const email = uniqueEmail('invited-race');
      const { rows } = await t.db.query<{ id: string }>('insert into users (email) values ($1) returning id', [email]);
      const token = await issuer.sign(email);
      const responses = await Promise.all(Array.from({ length: 10 }, () => t.call('GET', '/v1/me', { token })));
      assert.deepEqual(
        responses.map((r) => r.statusCode),
        Array(10).fill(200),
      );
      assert.ok(responses.every((r) => r.json().data.id === rows[0]!.id));
      assert.equal((await usersWithEmail(email)).length, 1);
      assert.equal((await auditRows('user.linked', rows[0]!.id)).length, 1);
    });

    it('an email already linked to another subject returns 409 identity_conflict and creates nothing', async () => {
      const email = uniqueEmail('taken');
      const first = await t.call('GET', '/v1/me', { as: email });
      assert.equal(first.statusCode, 200);
      const ownerId = first.json().data.id;
      const auditBefore = await auditCountForActor(ownerId);
      const res = await t.call('GET', '/v1/me', { token: await issuer.sign(email, { subject: 'other-subject' }) });
      assertError(res, 409, 'identity_conflict');
      const users = await usersWithEmail(email);
      assert.equal(users.length, 1);
      assert.equal(users[0]!.id, ownerId);
      assert.equal(users[0]!.external_subject, devSubject(email));
      const { rows } = await t.db.query(`select 1 from users where external_subject = 'other-subject'`);
      assert.equal(rows.length, 0);
      assert.equal(await auditCountForActor(ownerId), auditBefore);
      // The rightful identity still signs in.
      assert.equal((await t.call('GET', '/v1/me', { as: email })).json().data.id, ownerId);
    });
  });

  describe('first sign-in through the patient portal (spec 5.4.4)', () => {
    const patientRows = async (orgId: string, userId: string) =>
      (await t.db.query<{ id: string }>('select id from patients where organization_id = $1 and user_id = $2', [orgId, userId])).rows;

    it('X-Organization-ID on the first request links the user as a patient, once, with a patient.linked audit entry in that organization', async () => {
      const org = await t.createOrg();
      await t.publishPrivacyNotice(org.id);
      const email = uniqueEmail('patient');
      const token = await issuer.sign(email);
      const res = await t.call('GET', '/v1/me', { token, org: org.id });
      assert.equal(res.statusCode, 200, res.body);
      const me = res.json().data;
      const patients = await patientRows(org.id, me.id);
      assert.equal(patients.length, 1);
      const audit = await auditRows('patient.linked', patients[0]!.id);
      assert.equal(audit.length, 1);
      assert.equal(audit[0]!.organization_id, org.id);
      assert.equal(audit[0]!.actor_user_id, me.id);
      assert.equal(audit[0]!.entity_type, 'patient');
      // The very first response already reflects the link.
      assert.equal(me.current_organization_id, org.id);
      assert.equal(me.is_patient_at_current_org, true);
      assert.equal(me.is_staff_at_current_org, false);
      assert.deepEqual(me.patient_org_ids, [org.id]);

      // Repeat requests with the header: no second link, no second entry.
      for (let i = 0; i < 3; i++) assert.equal((await t.call('GET', '/v1/me', { token, org: org.id })).statusCode, 200);
      assert.equal((await patientRows(org.id, me.id)).length, 1);
      assert.equal((await auditRows('patient.linked', patients[0]!.id)).length, 1);
      const { rows } = await t.db.query<{ n: number }>(
        `select count(*)::int as n from audit_logs where action = 'patient.linked' and actor_user_id = $1`,
        [me.id],
      );
      assert.equal(rows[0]!.n, 1);

      const again = (await t.call('GET', '/v1/me', { token, org: org.id })).json().data;
      assert.equal(again.is_patient_at_current_org, true);
      assert.deepEqual(again.patient_org_ids, [org.id]);
      assert.deepEqual(again.current_permissions, []);
      // Without the header the patient has no staff scope, but keeps the patient link.
      const bare = (await t.call('GET', '/v1/me', { token })).json().data;
      assert.equal(bare.current_organization_id, null);
      assert.equal(bare.is_patient_at_current_org, false);
      assert.deepEqual(bare.patient_org_ids, [org.id]);
    });

    it('20 concurrent first requests with X-Organization-ID create one user, one patient row, one patient.linked entry, and all see the link', async () => {
      const org = await t.createOrg();
      await t.publishPrivacyNotice(org.id);
      const email = uniqueEmail('patient-race');
      const token = await issuer.sign(email);
      const responses = await Promise.all(Array.from({ length: 20 }, () => t.call('GET', '/v1/me', { token, org: org.id })));
      assert.deepEqual(
        responses.map((r) => r.statusCode),
        Array(20).fill(200),
      );
      const users = await usersWithEmail(email);
      assert.equal(users.length, 1);
      const patients = await patientRows(org.id, users[0]!.id);
      assert.equal(patients.length, 1);
      assert.equal((await auditRows('patient.linked', patients[0]!.id)).length, 1);
      assert.ok(responses.every((r) => r.json().data.is_patient_at_current_org === true));
    });

    it('a user who already exists is not linked as a patient by sending the header later', async () => {
      const org = await t.createOrg();
      const email = uniqueEmail('later');
      const me = (await t.call('GET', '/v1/me', { as: email })).json().data;
      const res = await t.call('GET', '/v1/me', { as: email, org: org.id });
      assert.equal(res.statusCode, 200);
      assert.equal(res.json().data.is_patient_at_current_org, false);
      assert.equal((await patientRows(org.id, me.id)).length, 0);
    });

    it('a pre-created user linked on first sign-in with X-Organization-ID also becomes a patient there', async () => {
      const org = await t.createOrg();
      await t.publishPrivacyNotice(org.id);
      const email = uniqueEmail('invited-patient');
      const { rows } = await t.db.query<{ id: string }>('insert into users (email) values ($1) returning id', [email]);
      const res = await t.call('GET', '/v1/me', { as: email, org: org.id });
      assert.equal(res.statusCode, 200);
      assert.equal(res.json().data.id, rows[0]!.id);
      assert.equal(res.json().data.is_patient_at_current_org, true);
      assert.equal((await patientRows(org.id, rows[0]!.id)).length, 1);
    });
  });

  describe('first sign-in of a member on the clinic host (the clinic app)', () => {
    it('a member invited by email whose first request carries X-Organization-ID is staff there, never linked as a patient', async () => {
      const org = await t.createOrg();
      await t.publishPrivacyNotice(org.id);
      const admin = await t.addMember(org.id, uniqueEmail('admin'), 'admin');
      const email = uniqueEmail('receptionist');
      const added = await t.call('POST', `/v1/organizations/${org.id}/members`, {
        token: admin.token,
        body: { email, role_code: 'specialist' },
      });
      assert.equal(added.statusCode, 201, added.body);
      const token = await issuer.sign(email);
      const res = await t.call('GET', '/v1/me', { token, org: org.id });
      assert.equal(res.statusCode, 200, res.body);
      const me = res.json().data;
      assert.equal(me.id, added.json().data.user_id);
      assert.equal(me.is_staff_at_current_org, true);
      assert.equal(me.is_patient_at_current_org, false);
      assert.deepEqual(me.patient_org_ids, []);
      const { rows } = await t.db.query('select id from patients where organization_id = $1 and user_id = $2', [org.id, me.id]);
      assert.equal(rows.length, 0);
      // A stranger's first request with the same header is still linked as a patient (spec 5.4.4).
      const stranger = (await t.call('GET', '/v1/me', { token: await issuer.sign(uniqueEmail('walk-in')), org: org.id })).json().data;
      assert.equal(stranger.is_patient_at_current_org, true);
    });
  });

  describe('X-Organization-ID (spec 4.1)', () => {
    it('a value that is not a uuid returns 400 validation_error', async () => {
      for (const bad of ['not-a-uuid', '123', `${randomUUID()}x`, "'; drop table users; --"]) {
        const res = await t.call('GET', '/v1/me', { as: uniqueEmail(), org: bad });
        assertError(res, 400, 'validation_error');
      }
    });

    it('an organization that does not exist returns 404 organization_not_found and links nothing', async () => {
      const missing = randomUUID();
      const newcomer = uniqueEmail('newcomer');
      assertError(await t.call('GET', '/v1/me', { as: newcomer, org: missing }), 404, 'organization_not_found');
      const known = uniqueEmail('known');
      assert.equal((await t.call('GET', '/v1/me', { as: known })).statusCode, 200);
      assertError(await t.call('GET', '/v1/me', { as: known, org: missing }), 404, 'organization_not_found');
      const { rows } = await t.db.query('select 1 from patients where organization_id = $1', [missing]);
      assert.equal(rows.length, 0);
      const audit = await t.db.query('select 1 from audit_logs where organization_id = $1', [missing]);
      assert.equal(audit.rows.length, 0);
    });

    it('an existing organization in upper case is accepted as the same organization', async () => {
      const org = await t.createOrg();
      const email = uniqueEmail();
      const res = await t.call('GET', '/v1/me', { as: email, org: org.id.toUpperCase() });
      assert.equal(res.statusCode, 200);
      assert.equal(res.json().data.current_organization_id, org.id);
    });

    it('the nil UUID means no scope for a caller without memberships', async () => {
      const email = uniqueEmail('nil');
      const res = await t.call('GET', '/v1/me', { as: email, org: NIL_UUID });
      assert.equal(res.statusCode, 200);
      const me = res.json().data;
      assert.equal(me.current_organization_id, null);
      assert.equal(me.is_patient_at_current_org, false);
      assert.equal(me.is_staff_at_current_org, false);
      assert.deepEqual(me.current_permissions, []);
      assert.equal(me.current_role_code, '');
      // The first request with the nil UUID links no patient anywhere.
      const { rows } = await t.db.query('select 1 from patients where user_id = $1', [me.id]);
      assert.equal(rows.length, 0);
    });

    it('the context service treats an explicitly requested nil UUID as no scope, even for a member', async () => {
      const org = await t.createOrg();
      const member = await t.addMember(org.id, uniqueEmail('member'), 'admin');
      const deps = { db: t.rt.db, verifier: t.rt.verifier, profile: t.rt.profile, permissionCatalog: t.rt.permissionCatalog };
      const base = {
        token: await t.rt.verifier.verify(member.token),
        rawToken: member.token,
        headerOrgId: null,
        ip: '127.0.0.1',
        log: t.app.log,
      };
      const implicit = await resolveContext(deps, { ...base, requestedOrgId: null });
      assert.equal(implicit.orgId, org.id, 'without a request the first membership is the scope');
      assert.ok(implicit.permissions.length > 0);
      const ctx = await resolveContext(deps, { ...base, requestedOrgId: NIL_UUID, headerOrgId: NIL_UUID });
      assert.equal(ctx.orgId, null);
      assert.deepEqual(ctx.permissions, []);
      assert.equal(ctx.roleCode, '');
      assert.equal(ctx.isStaff, false);
    });

    it('the nil UUID means no scope even for a member (the header wins over the first membership)', async () => {
      const org = await t.createOrg();
      const member = await t.addMember(org.id, uniqueEmail('member'), 'admin');
      const scoped = (await t.call('GET', '/v1/me', { token: member.token })).json().data;
      assert.equal(scoped.current_organization_id, org.id, 'without the header the first membership is the scope');
      const res = await t.call('GET', '/v1/me', { token: member.token, org: NIL_UUID });
      assert.equal(res.statusCode, 200);
      const me = res.json().data;
      assert.equal(me.current_organization_id, null);
      assert.deepEqual(me.current_permissions, []);
      assert.equal(me.current_role_code, '');
      assert.equal(me.is_staff_at_current_org, false);
    });
  });
});
