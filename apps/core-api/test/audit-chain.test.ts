import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CheckFailedError, runCommand } from '../src/cli/commands.ts';
import { verifyChain } from '../src/modules/audit/chain.ts';
import { dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

// Tamper evidence: each organization's audit entries form a hash chain; the CLI names the first broken link.

describe('audit hash chain', () => {
  let t: TestApp;
  let org: { id: string };
  let admin: string;

  before(async () => {
    t = await startTestApp();
    org = await t.createOrg();
    admin = (await t.addMember(org.id, uniqueEmail('admin'), 'admin')).token;
    for (let i = 0; i < 5; i++) {
      dataOf(
        await t.call('POST', `/v1/organizations/${org.id}/locations`, {
          token: admin,
          body: { name: `Room ${i}`, timezone: 'Europe/Bucharest' },
        }),
        201,
      );
    }
  });
  after(() => t.close());

  it('links every entry to the previous one, per organization, concurrency-safe', async () => {
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        t.call('POST', `/v1/organizations/${org.id}/locations`, { token: admin, body: { name: `Parallel ${i}`, timezone: 'UTC' } }),
      ),
    );
    const r = await verifyChain(t.db, org.id);
    assert.ok(r.ok, JSON.stringify(r));
    assert.ok(r.checked >= 16);
    assert.match(await runCommand(t.db, ['audit', 'verify', org.id]), /intact/);
    assert.ok((await verifyChain(t.db, null)).ok);
  });

  it("an entry edited behind the application's back breaks verification at that entry", async () => {
    const { rows } = await t.db.query<{ id: string; chain_seq: number }>(
      `select id, chain_seq from audit_logs where organization_id = $1 and action = 'location.created' order by chain_seq limit 1 offset 2`,
      [org.id],
    );
    const target = rows[0]!;
    // As the owner, with the append-only trigger lifted: what an attacker with database access could do.
    await t.db.transaction(async (tx) => {
      await tx.exec('alter table audit_logs disable trigger audit_logs_append_only');
      await tx.query(`update audit_logs set data = jsonb_set(data, '{name}', '"Forged"') where id = $1`, [target.id]);
      await tx.exec('alter table audit_logs enable trigger audit_logs_append_only');
    });
    const r = await verifyChain(t.db, org.id);
    assert.equal(r.ok, false);
    assert.equal(r.broken!.chain_seq, Number(target.chain_seq));
    assert.equal(r.broken!.id, target.id);
    await assert.rejects(
      runCommand(t.db, ['audit', 'verify', org.id]),
      (err: Error) => err instanceof CheckFailedError && err.message.includes(target.id),
    );
  });

  it('a deleted entry is named as missing', async () => {
    const other = await t.createOrg();
    const a = (await t.addMember(other.id, uniqueEmail('admin'), 'admin')).token;
    for (let i = 0; i < 3; i++)
      await t.call('POST', `/v1/organizations/${other.id}/locations`, { token: a, body: { name: `R${i}`, timezone: 'UTC' } });
    await t.db.transaction(async (tx) => {
      await tx.exec('alter table audit_logs disable trigger audit_logs_append_only');
      await tx.query(`delete from audit_logs where organization_id = $1 and chain_seq = 2`, [other.id]);
      await tx.exec('alter table audit_logs enable trigger audit_logs_append_only');
    });
    const r = await verifyChain(t.db, other.id);
    assert.equal(r.ok, false);
    assert.equal(r.broken!.chain_seq, 2);
  });

  it('the application roles cannot write chain fields or touch chain heads', async () => {
    await assert.rejects(
      t.db.withScope({ role: 'app_rls', principalId: null, orgId: org.id, permissions: [] }, (tx) =>
        tx.query('select * from audit_chain_heads'),
      ),
    );
  });
});
