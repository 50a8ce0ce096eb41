import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

describe('row-level security across the schema', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  it('every table of the public schema has RLS enabled and forced', async () => {
    const { rows } = await t.db.query<{ table: string; enabled: boolean; forced: boolean }>(
      `select c.relname as table, c.relrowsecurity as enabled, c.relforcerowsecurity as forced
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = 'public' and c.relkind in ('r', 'p') order by 1`,
    );
    assert.ok(rows.length >= 9, `expected the schema's tables, got ${rows.length}`);
    const missing = rows.filter((r) => !r.enabled || !r.forced).map((r) => r.table);
    assert.deepEqual(missing, [], `tables without enabled and forced row-level security: ${missing.join(', ')}`);
  });

  it('the application roles cannot update, delete or truncate audit rows, even with crafted SQL', async () => {
    const org = await t.createOrg();
    for (const role of ['app_rls', 'app_bypass'] as const) {
      for (const sql of ['update audit_logs set action = $1', 'delete from audit_logs where action <> $1', 'truncate audit_logs']) {
        await assert.rejects(
          t.db.withScope({ role, principalId: null, orgId: org.id, permissions: ['audit_log.view_org'] }, (tx) =>
            tx.query(sql.replace('$1', "'x'")),
          ),
          /permission denied|append-only/,
          `${role}: ${sql}`,
        );
      }
    }
    // The owner is stopped by the trigger too.
    await assert.rejects(t.db.query(`update audit_logs set action = 'tampered'`), /append-only/);
    const { rows } = await t.db.query<{ n: number }>(`select count(*)::int as n from audit_logs where action = 'organization.created'`);
    assert.ok(rows[0]!.n >= 1);
  });

  it('a query as app_rls with another organization in its settings sees none of this one', async () => {
    const a = await t.createOrg();
    const b = await t.createOrg();
    const admin = await t.addMember(a.id, uniqueEmail('admin-a'), 'admin');
    const asB = {
      role: 'app_rls' as const,
      principalId: admin.userId,
      orgId: b.id,
      permissions: ['organizations.view_directory', 'organizations.manage_members', 'audit_log.view_org', 'organizations.manage_domains'],
    };
    const counts = await t.db.withScope(asB, async (tx) => {
      const q = async (sql: string) => (await tx.query<{ n: number }>(sql, [a.id])).rows[0]!.n;
      return {
        roles: await q('select count(*)::int as n from roles where organization_id = $1'),
        role_permissions: await q('select count(*)::int as n from role_permissions where organization_id = $1'),
        memberships_of_others: await q(
          `select count(*)::int as n from memberships where organization_id = $1 and user_id <> '${admin.userId}'`,
        ),
        audit: await q('select count(*)::int as n from audit_logs where organization_id = $1'),
        domains: await q('select count(*)::int as n from organization_domains where organization_id = $1'),
      };
    });
    assert.deepEqual(counts, { roles: 0, role_permissions: 0, memberships_of_others: 0, audit: 0, domains: 0 });
    // The same statements with A's settings do see A's rows: the zeros above are the policy, not an empty table.
    const own = await t.db.withScope(
      { ...asB, orgId: a.id },
      async (tx) => (await tx.query<{ n: number }>('select count(*)::int as n from roles where organization_id = $1', [a.id])).rows[0]!.n,
    );
    assert.equal(own, 3);
  });

  it('app_rls without settings sees no organization at all: there is no open policy', async () => {
    await t.createOrg();
    const n = await t.db.withScope(
      { role: 'app_rls', principalId: null, orgId: null, permissions: [] },
      async (tx) => (await tx.query<{ n: number }>('select count(*)::int as n from organizations')).rows[0]!.n,
    );
    assert.equal(n, 0);
  });

  it('settings are transaction-local: the next transaction on the connection runs as the owner again', async () => {
    await t.db.withScope({ role: 'app_rls', principalId: null, orgId: null, permissions: [] }, (tx) => tx.query('select 1'));
    const { rows } = await t.db.query<{ role: string; org: string | null }>(
      `select current_user as role, current_setting('app.org_id', true) as org`,
    );
    assert.notEqual(rows[0]!.role, 'app_rls');
    assert.ok(!rows[0]!.org, 'app.org_id leaked out of its transaction');
  });
});
