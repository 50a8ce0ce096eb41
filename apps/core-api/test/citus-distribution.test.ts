import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { TestDatabase } from '@clinic/db';
import { freshDatabase } from './helpers.ts';

/*
 * On a Citus coordinator (`npm run test:citus`; skipped elsewhere): the migrations distributed the schema
 * (0181, docs/scaling.md) and the request scope reaches the workers. Through the database package's own
 * withScope, not the API: requests do not all work on Citus yet (docs/scaling.md, "What fails on Citus today").
 */

const ON_CITUS = process.env.TEST_CITUS === '1';

describe('the schema distributed by organization on Citus', { skip: !ON_CITUS && 'needs npm run test:citus (CITUS_URL)' }, () => {
  let database: TestDatabase;
  const orgs: string[] = [];

  before(async () => {
    database = await freshDatabase();
    // Organizations are written here without their triggers (they create settings rows through a nested
    // distributed statement, which Citus refuses today): this file tests placement and routing only.
    await database.db.transaction(async (tx) => {
      await tx.query('set local citus.enable_unsafe_triggers = on');
      await tx.query('alter table organizations disable trigger user');
    });
    for (let k = 0; k < 4; k++) {
      const { rows } = await database.db.query<{ id: string }>(
        `insert into organizations (slug, name) values ('citus-' || substr(md5(random()::text), 1, 10), 'Clinic') returning id`,
      );
      orgs.push(rows[0]!.id);
      await database.db.query('insert into patient_counts (organization_id, slot, live) select $1, g, 1 from generate_series(0, 4) g', [
        rows[0]!.id,
      ]);
    }
  });

  after(async () => {
    await database?.drop();
  });

  it('distributes every tenant table in one co-location group and makes the catalogs reference tables', async () => {
    const { rows } = await database.db.query<{ name: string; kind: string | null; colocation: number | null }>(
      `select c.relname as name, t.citus_table_type as kind, t.colocation_id as colocation
       from pg_class c left join citus_tables t on t.table_name = c.oid::regclass
       where c.relnamespace = 'public'::regnamespace and c.relkind = 'r'
         and exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'organization_id' and a.attnotnull)
         and c.relname <> 'organization_domains'`,
    );
    assert.ok(rows.length >= 60, `tenant tables: ${rows.length}`);
    assert.deepEqual(
      rows.filter((r) => r.kind !== 'distributed').map((r) => r.name),
      [],
    );
    assert.equal(new Set(rows.map((r) => r.colocation)).size, 1);
    const reference = await database.db.query<{ name: string }>(
      `select table_name::text as name from citus_tables where citus_table_type = 'reference' order by 1`,
    );
    for (const name of ['organizations', 'permissions', 'platform_provider_kinds', 'users', 'roles', 'exercises']) {
      assert.ok(
        reference.rows.some((r) => r.name === name),
        name,
      );
    }
  });

  it("a request's scope reaches the workers: row-level security there sees its organization only", async () => {
    const seen = await database.db.withScope(
      { role: 'app_rls', orgId: orgs[1]!, principalId: null, permissions: ['patients.view_org'] },
      async (tx) => (await tx.query<{ n: number }>('select count(*)::int as n from patient_counts')).rows[0]!.n,
    );
    assert.equal(seen, 5);
  });

  it('a statement that names the organization runs on one node; without it, on every shard', async () => {
    const tasks = async (sql: string) =>
      database.db.withScope({ role: 'app_rls', orgId: orgs[2]!, principalId: null, permissions: ['patients.view_org'] }, async (tx) => {
        const plan = (await tx.query<{ 'QUERY PLAN': string }>(`explain ${sql}`)).rows.map((r) => r['QUERY PLAN']).join('\n');
        return Number(/Task Count: (\d+)/.exec(plan)?.[1]);
      });
    assert.equal(await tasks(`select count(*) from patient_counts where organization_id = '${orgs[2]}'`), 1);
    assert.ok((await tasks('select count(*) from patient_counts')) > 1);
  });
});
