// The re-consent gate's cost (spec 4.6 rule 3: "the gate must not add a database round trip
// on a warm instance"). Two API instances in one process, on the same PostgreSQL database and the
// same data: one with the gate on (default), one built with CONSENT_GATE=off (the gate's part of the
// context statement and its check skipped). The caller is a patient of the organization who accepted
// the published platform purposes and the clinic's published purposes, so the gate computes and
// passes. Route: GET /v1/organizations/{id}. Prints req/s, p50/p99 and the ratio on/off (target >= 0.9).
// Run: npx tsx bench/gate.ts (PostgreSQL at BENCH_DATABASE_URL; BENCH_SECONDS per measurement, default 8).
import { createTestDatabase } from '@clinic/db';
import { buildApp } from '../apps/core-api/src/app.ts';
import { parseConfig } from '../apps/core-api/src/config.ts';
import { createDevIssuer } from '../apps/core-api/src/platform/auth/dev-issuer.ts';
import { createRuntime } from '../apps/core-api/src/platform/runtime.ts';
import { NO_RATE_LIMITS, load, row } from './support.ts';

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const testDb = await createTestDatabase(ADMIN_URL);
const issuer = await createDevIssuer({ dataDir: null, issuer: 'clinic-platform-dev-issuer', audience: 'clinic-platform' });
// In-process limiter stores (no Redis): both instances pay the same, and the comparison is the gate's.
const base = { NODE_ENV: 'test', LOG_LEVEL: 'warn', ...NO_RATE_LIMITS } as const;
const rtOn = await createRuntime(parseConfig({ ...base }), { db: testDb.db, devIssuer: issuer });
const rtOff = await createRuntime(parseConfig({ ...base, CONSENT_GATE: 'off' }), {
  db: testDb.db,
  devIssuer: issuer,
  skipMigrations: true,
});
const on = await buildApp(rtOn);
const off = await buildApp(rtOff);

const auth = (token: string) => ({ authorization: `Bearer ${token}` });
async function call(method: 'GET' | 'POST', url: string, token: string, payload?: unknown) {
  const res = await on.inject({ method, url, headers: auth(token), ...(payload ? { payload: payload as object } : {}) });
  if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
  return res.json().data;
}

// Data: an organization, published platform and clinic purposes, a patient who accepted them all.
await testDb.db.query(`insert into users (email) values ('gate-su@example.com')`);
await testDb.db.query(
  `insert into platform_memberships (user_id, role) select id, 'superadmin' from users where email = 'gate-su@example.com'`,
);
const su = await issuer.sign('gate-su@example.com');
const org = await call('POST', '/v1/organizations', su, { name: 'Gate bench', slug: 'gate-bench' });
const published: { org: string | null; code: string; version: number }[] = [];
for (const code of ['platform_terms', 'platform_privacy_notice', 'org_terms']) {
  const v = await call('POST', `/v1/admin/consent-purposes/${code}/versions`, su, { body_translations: { en: `${code} text` } });
  published.push({ org: code.startsWith('org') ? org.id : null, code, version: v.version });
}
const notice = await call('POST', `/v1/organizations/${org.id}/consent-purposes/org_privacy_notice/versions`, su, {
  body_translations: { en: 'notice' },
});
published.push({ org: org.id, code: 'org_privacy_notice', version: notice.version });
const grants = published.map((p) => ({
  organization_id: p.org,
  purpose_code: p.code,
  purpose_version: p.version,
  source: 'signup_checkbox',
}));
const patientToken = await issuer.sign('gate-patient@example.com');
await call('POST', '/v1/portal/onboard', patientToken, { organization_id: org.id, grants });

const url = `/v1/organizations/${org.id}`;
// The gate computes: with a missing purpose the same patient would be refused.
const check = await on.inject({ method: 'GET', url, headers: auth(patientToken) });
if (check.statusCode !== 200) throw new Error(`patient GET ${url}: ${check.statusCode} ${check.body}`);

const onUrl = await on.listen({ port: 0, host: '127.0.0.1' });
const offUrl = await off.listen({ port: 0, host: '127.0.0.1' });
const headers = auth(patientToken);
await load(`${onUrl}${url}`, headers, 2);
await load(`${offUrl}${url}`, headers, 2);
const gateOff = await load(`${offUrl}${url}`, headers);
const gateOn = await load(`${onUrl}${url}`, headers);

console.log(
  `\nGET /v1/organizations/{id} as a patient who accepted ${published.length} published required purposes (PostgreSQL, loopback, 16 connections)`,
);
console.log(row('gate off (CONSENT_GATE=off)', gateOff));
console.log(row('gate on', gateOn));
console.log(`ratio (on / off): ${(gateOn.rps / gateOff.rps).toFixed(2)}   target >= 0.9`);
if (gateOn.errors + gateOn.non2xx + gateOff.errors + gateOff.non2xx > 0) console.log('WARNING: errors or non-2xx responses during the run');

// Let requests still in flight when the load stopped finish before the pool closes.
await new Promise((r) => setTimeout(r, 500));
await on.close();
await off.close();
await rtOn.close();
await rtOff.close();
await testDb.drop();
