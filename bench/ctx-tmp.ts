import { createTestDatabase, migrate } from '@clinic/db';
import pg from 'pg';
import { readFileSync } from 'node:fs';
import { MIGRATIONS_DIR } from '../apps/core-api/src/platform/runtime.ts';
const t = await createTestDatabase('postgres://postgres@127.0.0.1:5432/postgres');
await migrate(t.db, MIGRATIONS_DIR);
await t.db.exec(readFileSync('/tmp/proto/fn.sql', 'utf8'));
// A staff member of one org who is also a patient there, with platform terms published and accepted.
await t.db.exec(`
insert into users (email, external_subject) values ('a@b.c', 'sub1');
insert into organizations (slug, name) values ('o1', 'O1');
insert into roles (organization_id, code, name, is_system) select o.id, 'admin', 'Admin', true from organizations o;
insert into role_permissions (role_id, permission_code, organization_id) select r.id, 'organizations.update', r.organization_id from roles r where r.organization_id is not null;
insert into memberships (user_id, organization_id, role_id) select u.id, r.organization_id, r.id from users u, roles r where r.organization_id is not null;
insert into patients (organization_id, user_id) select o.id, u.id from organizations o, users u;
insert into consent_purpose_versions (purpose_code, organization_id, version, body_translations, published_by_principal_id) select 'platform_terms', null, 1, '{"en":"t"}', u.id from users u;
insert into consent_ledger (organization_id, patient_profile_id, purpose_code, purpose_version, source, granted_by_principal_id) select null, u.id, 'platform_terms', 1, 'api', u.id from users u;
`);
const src = readFileSync('apps/core-api/src/modules/identity/queries.ts', 'utf8');
const SQL = /const CONTEXT_SQL = `([\s\S]*?)`;/.exec(src)![1]!;
const pool = new pg.Pool({ connectionString: t.url!, max: 16, options: '-c jit=off' });
const a = await pool.query({ name: 'ctx', text: SQL, values: ['sub1', null, true] });
const b = await pool.query({ name: 'fn', text: 'select * from app.request_context($1, $2, $3)', values: ['sub1', null, true] });
console.log(
  JSON.stringify(a.rows[0]) === JSON.stringify(b.rows[0])
    ? 'SAME RESULT'
    : `DIFFERENT\n${JSON.stringify(a.rows[0])}\n${JSON.stringify(b.rows[0])}`,
);
const cases: [string, () => Promise<unknown>][] = [
  ['context statement', () => pool.query({ name: 'ctx', text: SQL, values: ['sub1', null, true] })],
  [
    'plpgsql function',
    () => pool.query({ name: 'fn', text: 'select * from app.request_context($1, $2, $3)', values: ['sub1', null, true] }),
  ],
  ['pk', () => pool.query({ name: 'pk', text: 'select * from users where external_subject = $1', values: ['sub1'] })],
];
for (let round = 0; round < 2; round++)
  for (const [name, fn] of cases) {
    for (let w = 0; w < 300; w++) await fn();
    const t0 = performance.now();
    const N = 6000;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let i = 0; i < N / 16; i++) await fn();
      }),
    );
    console.log(name.padEnd(20), ((N / (performance.now() - t0)) * 1000).toFixed(0), 'ops/s');
  }
await pool.end();
await t.drop();
