import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Database, isForeignKeyViolation, MIGRATIONS_DIR, migrate, type TestDatabase } from '@clinic/db';
import { dataOf, emptyDatabase, startTestApp, type TestApp } from './helpers.ts';
import { clinicRows } from './support/clinic-rows.ts';

/*
 * Issue 31, point 1 (docs/scaling.md): the schema distributes by organization. An existing database is
 * upgraded: migrated to the last migration before the distribution work (0180), filled through the API by two
 * clinics, then the rest is applied. Every row must be unchanged, every key of a tenant table must lead with
 * organization_id and every foreign key between tenant tables must be composite, so that a row can no longer
 * point at another organization's row.
 */

const FIRST = '0180';

/** Tenant tables: organization_id NOT NULL (organization_domains is a global routing table, docs/scaling.md). */
const TENANT = `select r.oid, (select attnum from pg_attribute where attrelid = r.oid and attname = 'organization_id') as org
  from pg_class r join pg_attribute a on a.attrelid = r.oid and a.attname = 'organization_id' and a.attnotnull
  where r.relnamespace = 'public'::regnamespace and r.relkind = 'r' and r.relname <> 'organization_domains'`;

/** Keys, unique indexes and tenant-to-tenant foreign keys that do not lead with organization_id. */
const NOT_LEADING = `with t as (${TENANT})
  select c.conrelid::regclass::text as rel, c.conname as name from pg_constraint c join t on t.oid = c.conrelid
   where c.contype in ('p', 'u', 'x') and c.conkey[1] <> t.org
  union all
  select i.indrelid::regclass::text, i.indexrelid::regclass::text from pg_index i join t on t.oid = i.indrelid
   where i.indisunique and i.indkey[0] <> t.org
  union all
  select c.conrelid::regclass::text, c.conname from pg_constraint c join t on t.oid = c.conrelid join t r on r.oid = c.confrelid
   where c.contype = 'f' and (c.conkey[1] <> t.org or c.confkey[1] <> r.org)
  order by 1, 2`;

/** Every table's rows, as one digest per table: a migration that only changes constraints changes none. */
async function contents(db: Database): Promise<Record<string, string>> {
  const tables = await db.query<{ name: string }>(
    `select relname as name from pg_class where relnamespace = 'public'::regnamespace and relkind = 'r' order by 1`,
  );
  const out: Record<string, string> = {};
  for (const { name } of tables.rows) {
    const { rows } = await db.query<{ n: number; digest: string | null }>(
      `select count(*)::int as n, md5(string_agg(t::text, '|' order by t::text)) as digest from public.${name} t`,
    );
    out[name] = `${rows[0]!.n}:${rows[0]!.digest ?? ''}`;
  }
  return out;
}

describe('upgrade to a schema that distributes by organization', () => {
  let database: TestDatabase;
  let t: TestApp;
  let before0180: Record<string, string>;
  let applied: string[];
  const orgs: { id: string; rows: Record<string, string>; token: string }[] = [];

  before(async () => {
    database = await emptyDatabase();
    const earlier = await mkdtemp(join(tmpdir(), 'migrations-before-'));
    for (const file of await readdir(MIGRATIONS_DIR)) {
      if (file < FIRST) await symlink(join(MIGRATIONS_DIR, file), join(earlier, file));
    }
    await migrate(database.db, earlier);
    t = await startTestApp({ database, migrate: false });
    for (const name of ['Upgrade A', 'Upgrade B']) {
      const org = await t.createOrg({ name });
      const { admin, rows } = await clinicRows(t, org.id);
      orgs.push({ id: org.id, rows, token: admin.token });
    }
    before0180 = await contents(t.db);
    applied = await migrate(t.db, MIGRATIONS_DIR);
  });

  after(async () => {
    await t?.close();
    await database?.drop();
  });

  it('applies the distribution migrations and keeps every row of every table', async () => {
    assert.ok(applied.length > 0 && applied.every((f) => f >= FIRST), applied.join(', '));
    assert.ok(Number(before0180.appointments?.split(':')[0]) >= 2, 'the data set has appointments');
    assert.deepEqual(await contents(t.db), before0180);
  });

  it('leads every key, unique index and tenant foreign key with organization_id', async () => {
    const tenant = await t.db.query(TENANT);
    assert.ok(tenant.rows.length >= 60, `tenant tables: ${tenant.rows.length}`);
    assert.deepEqual((await t.db.query(NOT_LEADING)).rows, []);
    const def = async (table: string, name: string) =>
      (
        await t.db.query<{ def: string }>(
          'select pg_get_constraintdef(oid) as def from pg_constraint where conrelid = $1::regclass and conname = $2',
          [table, name],
        )
      ).rows[0]?.def;
    assert.equal(await def('patients', 'patients_pkey'), 'PRIMARY KEY (organization_id, id)');
    assert.equal(
      await def('forms', 'forms_patient_id_fkey'),
      'FOREIGN KEY (organization_id, patient_id) REFERENCES patients(organization_id, id)',
    );
    // SET NULL names its column: deleting the specialist must not null the appointment's organization.
    assert.match(
      (await def('appointments', 'appointments_organization_id_specialist_id_fkey')) ?? '',
      /ON DELETE SET NULL \(specialist_id\)$/,
    );
  });

  it("refuses a row that points at another organization's row", async () => {
    const [a, b] = orgs;
    // Before the upgrade the foreign key named patients(id) alone, and this update went through.
    await assert.rejects(
      t.db.query(`insert into webhook_deliveries (organization_id, subscription_id, event_id, event_type) values ($1, $2, $3, 'x')`, [
        a!.id,
        b!.rows.webhook_subscriptions,
        randomUUID(),
      ]),
      (err) => isForeignKeyViolation(err),
    );
  });

  it('serves the clinics after the upgrade', async () => {
    for (const org of orgs) {
      const res = await t.call('GET', `/v1/appointments/${org.rows.appointments}`, { token: org.token, org: org.id });
      assert.equal(dataOf(res).id, org.rows.appointments);
      const made = await t.call('POST', `/v1/organizations/${org.id}/locations`, {
        token: org.token,
        org: org.id,
        body: { name: 'After the upgrade', timezone: 'Europe/Bucharest' },
      });
      assert.equal(made.statusCode, 201, made.body);
    }
  });
});
