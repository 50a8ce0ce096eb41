import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { CheckFailedError, runCommand } from '../src/cli/commands.ts';
import { verifyChain } from '../src/modules/audit/chain.ts';
import { CHECKPOINT_KEY_LABEL, signCheckpoint } from '../src/modules/audit/checkpoints.ts';
import { applyAuditRetention } from '../src/modules/audit/retention.ts';
import { createSecretBox, parseMasterKeys } from '../src/platform/secrets.ts';
import { startTestApp, type TestApp, uniqueEmail } from './helpers.ts';

/**
 * Audit retention (spec 8: 6 years) on a clock the tests move: the sweep removes a chain's entries older
 * than the retention up to a cut and records a signed checkpoint in the same transaction; `audit verify`
 * starts from the latest valid checkpoint. Each test builds its own chain under an organization id of its
 * own (the audit log has no foreign keys), with entries dated in the past by the test.
 */
describe('audit retention with signed checkpoints', () => {
  let t: TestApp;
  // The sweeps' clock: entries are dated relative to it, and later sweeps move it forward.
  const NOW = new Date();
  const MONTHS = 72;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t?.close());

  const keys = () => t.rt.secrets.derivedKeys(CHECKPOINT_KEY_LABEL);
  const deps = (extra: { batchSize?: number } = {}) => ({ db: t.db, secrets: t.rt.secrets, months: MONTHS, ...extra });
  const later = (months: number) => new Date(NOW.getTime() + months * 31 * 24 * 3600 * 1000);

  /** A chain of entries, oldest first, each `age` (an interval) before NOW. */
  async function chainWith(ages: string[]): Promise<string> {
    const chain = randomUUID();
    for (const age of ages)
      await t.db.query(
        `insert into audit_logs (organization_id, action, entity_type, created_at) values ($1, 'test.entry', 'test', $2::timestamptz - $3::interval)`,
        [chain, NOW, age],
      );
    return chain;
  }
  const seqs = async (chain: string) =>
    (
      await t.db.query<{ chain_seq: string }>('select chain_seq from audit_logs where organization_id = $1 order by chain_seq', [chain])
    ).rows.map((r) => Number(r.chain_seq));
  const checkpoints = async (chain: string) =>
    (
      await t.db.query<{ id: string; cut_seq: string; removed: string; key_id: string }>(
        'select id, cut_seq, removed, key_id from audit_checkpoints where chain_id = $1 order by cut_seq, created_at',
        [chain],
      )
    ).rows.map((r) => ({ id: r.id, cut_seq: Number(r.cut_seq), removed: Number(r.removed), key_id: r.key_id }));
  /** What an attacker with the owner's access can do: lift a table's append-only trigger for one statement. */
  const behindTheBack = (table: string, sql: string, params: unknown[]) =>
    t.db.transaction(async (tx) => {
      await tx.exec(`alter table ${table} disable trigger ${table}_append_only`);
      await tx.query(sql, params);
      await tx.exec(`alter table ${table} enable trigger ${table}_append_only`);
    });

  it('removes entries older than the retention, keeps younger ones, and the chain still verifies', async () => {
    const chain = await chainWith(['80 months', '79 months', '78 months', '75 months', '73 months', '60 months', '76 months', '1 day']);
    assert.ok((await verifyChain(t.db, chain, keys())).ok);
    const r = await applyAuditRetention(deps(), NOW);
    assert.equal(r.removed[chain], 5, 'entries 1-5 are older than 72 months');
    assert.deepEqual(r.refused, []);
    assert.deepEqual(await seqs(chain), [6, 7, 8], 'the cut stops at the first younger entry: the 76-month entry after it stays too');
    const [cp] = await checkpoints(chain);
    assert.deepEqual({ cut_seq: cp!.cut_seq, removed: cp!.removed, key_id: cp!.key_id }, { cut_seq: 5, removed: 5, key_id: 'test' });

    const v = await verifyChain(t.db, chain, keys());
    assert.ok(v.ok, JSON.stringify(v));
    assert.equal(v.checked, 3);
    assert.equal(v.from!.cut_seq, 5);
    const out = await runCommand(t.db, ['audit', 'verify', chain], { secrets: async () => t.rt.secrets });
    assert.match(out, /3 entries after the checkpoint at entry 5 .*intact/);

    // Nothing more is due at the same instant: a second run adds no checkpoint.
    assert.equal((await applyAuditRetention(deps(), NOW)).removed[chain], undefined);
    assert.equal((await checkpoints(chain)).length, 1);

    // New entries keep linking after the cut.
    await t.db.query(`insert into audit_logs (organization_id, action, entity_type) values ($1, 'test.entry', 'test')`, [chain]);
    assert.ok((await verifyChain(t.db, chain, keys())).ok);
  });

  it('a later sweep cuts further with a new checkpoint, and the chain verifies from it', async () => {
    const chain = await chainWith(['74 months', '73 months', '62 months', '61 months', '2 months']);
    assert.equal((await applyAuditRetention(deps(), NOW)).removed[chain], 2);
    // Twelve months on (about a year on the sweep's clock), the 61- and 62-month entries are over 72.
    const r = await applyAuditRetention(deps(), later(12));
    assert.equal(r.removed[chain], 2);
    assert.deepEqual(await seqs(chain), [5]);
    assert.deepEqual(
      (await checkpoints(chain)).map((c) => c.cut_seq),
      [2, 4],
    );
    const v = await verifyChain(t.db, chain, keys());
    assert.ok(v.ok, JSON.stringify(v));
    assert.equal(v.from!.cut_seq, 4);
    assert.equal(v.checked, 1);
  });

  it('a long backlog is cut in steps, one checkpoint per transaction', async () => {
    const chain = await chainWith(['90 months', '89 months', '88 months', '87 months', '86 months', '1 month']);
    const r = await applyAuditRetention(deps({ batchSize: 2 }), NOW);
    assert.equal(r.removed[chain], 5);
    assert.deepEqual(
      (await checkpoints(chain)).map((c) => c.cut_seq),
      [2, 4, 5],
    );
    assert.ok((await verifyChain(t.db, chain, keys())).ok);
  });

  it('a checkpoint whose hash or signature was changed breaks verification, and so does one signed without the key', async () => {
    for (const tamper of ['hash', 'signature', 'forged'] as const) {
      const chain = await chainWith(['80 months', '79 months', '1 day']);
      await applyAuditRetention(deps(), NOW);
      const [cp] = await checkpoints(chain);
      if (tamper === 'hash')
        await behindTheBack('audit_checkpoints', `update audit_checkpoints set last_hash = repeat('a', 64) where id = $1`, [cp!.id]);
      else if (tamper === 'signature')
        await behindTheBack('audit_checkpoints', `update audit_checkpoints set signature = repeat('0', 64) where id = $1`, [cp!.id]);
      else {
        // A checkpoint further on, signed with a key that is not the master key, under the master key's id.
        const fields = { chain_id: chain, cut_seq: 3, last_hash: 'b'.repeat(64), older_than: NOW, created_at: NOW };
        const forged = signCheckpoint([{ id: 'test', key: randomBytes(32) }], fields);
        await t.db.query(
          `insert into audit_checkpoints (chain_id, cut_seq, last_hash, older_than, removed, key_id, signature, created_at)
           values ($1, 3, $2, $3, 0, $4, $5, $3)`,
          [chain, fields.last_hash, NOW, forged.key_id, forged.signature],
        );
      }
      const v = await verifyChain(t.db, chain, keys());
      assert.equal(v.ok, false, tamper);
      assert.match(v.broken!.reason, /checkpoint .* does not verify/, tamper);
      await assert.rejects(
        runCommand(t.db, ['audit', 'verify', chain], { secrets: async () => t.rt.secrets }),
        (err: Error) => err instanceof CheckFailedError && /does not verify/.test(err.message),
      );
    }
  });

  it('head entries deleted without a checkpoint break verification, and the sweep refuses to cut over the gap', async () => {
    const chain = await chainWith(['80 months', '79 months', '78 months', '1 day']);
    await behindTheBack('audit_logs', 'delete from audit_logs where organization_id = $1 and chain_seq <= 2', [chain]);
    const v = await verifyChain(t.db, chain, keys());
    assert.equal(v.ok, false);
    assert.equal(v.broken!.chain_seq, 1);
    assert.match(v.broken!.reason, /entries 1 to 2 are missing at the head of the chain and no valid checkpoint covers them/);

    // The sweep would otherwise sign a checkpoint over entry 3 and turn the break into a clean start.
    const r = await applyAuditRetention(deps(), NOW);
    assert.deepEqual(
      r.refused.filter((x) => x.chain === chain).map((x) => x.chain_seq),
      [1],
    );
    assert.deepEqual(await checkpoints(chain), []);
    assert.deepEqual(await seqs(chain), [3, 4]);

    // So does an entry edited inside the part due for removal.
    const edited = await chainWith(['80 months', '79 months', '1 day']);
    await behindTheBack('audit_logs', `update audit_logs set data = '{"x":1}' where organization_id = $1 and chain_seq = 2`, [edited]);
    assert.equal((await applyAuditRetention(deps(), NOW)).refused.find((x) => x.chain === edited)?.chain_seq, 2);
    assert.deepEqual(await seqs(edited), [1, 2, 3]);
  });

  it('a rotated master key keeps checkpoints checkable while the old key is listed', async () => {
    const chain = await chainWith(['80 months', '1 day']);
    const k1 = `k1:${randomBytes(32).toString('base64')}`;
    const k2 = `k2:${randomBytes(32).toString('base64')}`;
    await applyAuditRetention({ ...deps(), secrets: createSecretBox(parseMasterKeys(k1)) }, NOW);
    const both = createSecretBox(parseMasterKeys(`${k2},${k1}`)).derivedKeys(CHECKPOINT_KEY_LABEL);
    assert.ok((await verifyChain(t.db, chain, both)).ok);
    const onlyNew = await verifyChain(t.db, chain, createSecretBox(parseMasterKeys(k2)).derivedKeys(CHECKPOINT_KEY_LABEL));
    assert.equal(onlyNew.ok, false);
    assert.match(onlyNew.broken!.reason, /master key "k1", which is not in MASTER_KEYS/);

    // The rotation's re-encrypt step signs the latest checkpoint again under k2; then k1 can go.
    const bothBox = createSecretBox(parseMasterKeys(`${k2},${k1}`));
    const out = await runCommand(t.db, ['providers', 're-encrypt'], { secrets: async () => bothBox });
    assert.match(out, /audit checkpoints: [1-9]\d* re-signed/);
    assert.deepEqual(
      (await checkpoints(chain)).map((c) => c.key_id),
      ['k1', 'k2'],
    );
    const afterRotation = await verifyChain(t.db, chain, createSecretBox(parseMasterKeys(k2)).derivedKeys(CHECKPOINT_KEY_LABEL));
    assert.ok(afterRotation.ok, JSON.stringify(afterRotation));
    // Checkpoints signed under a key the box does not hold (this app's own) are counted, not re-signed.
    assert.match(out, /NOT re-signed/);
    assert.match(await runCommand(t.db, ['providers', 're-encrypt'], { secrets: async () => bothBox }), /0 re-signed/);
  });

  it('only the sweep deletes: the application roles cannot delete entries or call the prune function, nor read checkpoints', async () => {
    const chain = await chainWith(['80 months', '1 day']);
    for (const role of ['app_rls', 'app_bypass'] as const) {
      const scope = { role, principalId: null, orgId: chain, permissions: ['audit_log.view_org'] };
      await assert.rejects(
        t.db.withScope(scope, (tx) => tx.query('delete from audit_logs where organization_id = $1', [chain])),
        /permission denied|append-only/,
        `${role}: plain delete`,
      );
      // The marker the trigger honours gives nothing to a role without the delete privilege.
      await assert.rejects(
        t.db.withScope(scope, async (tx) => {
          await tx.query(`select set_config('app.audit_prune', $1, true)`, [`${chain}:1`]);
          await tx.query('delete from audit_logs where organization_id = $1', [chain]);
        }),
        /permission denied/,
        `${role}: delete with the marker set`,
      );
      await assert.rejects(
        t.db.withScope(scope, (tx) =>
          tx.query(`select app.audit_prune($1, 1, repeat('0', 64), now(), 'x', repeat('0', 64), now())`, [chain]),
        ),
        /permission denied/,
        `${role}: prune function`,
      );
      for (const sql of [
        'select * from audit_checkpoints',
        `insert into audit_checkpoints (chain_id, cut_seq, last_hash, older_than, removed, key_id, signature, created_at)
         values ('${chain}', 1, repeat('0', 64), now(), 0, 'x', repeat('0', 64), now())`,
      ])
        await assert.rejects(
          t.db.withScope(scope, (tx) => tx.query(sql)),
          /permission denied/,
          `${role}: ${sql.slice(0, 30)}`,
        );
    }
    // The owner too is stopped by the trigger, and by the marker alone (no checkpoint at that cut).
    await assert.rejects(t.db.query('delete from audit_logs where organization_id = $1', [chain]), /append-only/);
    await assert.rejects(
      t.db.transaction(async (tx) => {
        await tx.query(`select set_config('app.audit_prune', $1, true)`, [`${chain}:1`]);
        await tx.query('delete from audit_logs where organization_id = $1 and chain_seq = 1', [chain]);
      }),
      /append-only/,
    );
    // Checkpoints are append-only for the owner as well.
    await applyAuditRetention(deps(), NOW);
    await assert.rejects(t.db.query('delete from audit_checkpoints where chain_id = $1', [chain]), /append-only/);
    await assert.rejects(t.db.query(`update audit_checkpoints set cut_seq = 9 where chain_id = $1`, [chain]), /append-only/);
    assert.deepEqual(await seqs(chain), [2]);
  });

  it('six years on, every chain (organizations and the platform) is cut and still verifies, and keeps growing', async () => {
    const org = await t.createOrg();
    const admin = (await t.addMember(org.id, uniqueEmail('admin'), 'admin')).token;
    const r = await applyAuditRetention(deps(), later(MONTHS + 1));
    // (The chains broken on purpose by the tests above are refused, as they should be.)
    assert.deepEqual(
      r.refused.filter((x) => x.chain === org.id || x.chain === 'platform'),
      [],
    );
    assert.ok(r.removed[org.id]! >= 1);
    assert.ok(r.removed.platform! >= 1, 'the platform chain too');
    for (const id of [org.id, null]) {
      const v = await verifyChain(t.db, id, keys());
      assert.ok(v.ok, JSON.stringify(v));
      assert.equal(v.checked, 0);
      assert.ok(v.from);
    }
    const res = await t.call('POST', `/v1/organizations/${org.id}/locations`, {
      token: admin,
      body: { name: 'After the cut', timezone: 'UTC' },
    });
    assert.equal(res.statusCode, 201);
    const v = await verifyChain(t.db, org.id, keys());
    assert.ok(v.ok && v.checked >= 1, JSON.stringify(v));
    assert.match(await runCommand(t.db, ['audit', 'verify', 'platform'], { secrets: async () => t.rt.secrets }), /intact/);
  });
});
