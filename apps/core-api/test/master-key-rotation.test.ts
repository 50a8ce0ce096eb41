import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { runCommand } from '../src/cli/commands.ts';
import { createSecretBox, parseMasterKeys, SecretKeyError } from '../src/platform/secrets.ts';
import { dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

// Master key rotation (spec 5, docs/operations.md): `npm run cli -- providers re-encrypt` moves every
// sealed secret to the first key of MASTER_KEYS, webhook signing secrets included, so the old key can
// then be dropped without breaking a subscription.

const K1 = `k1:${Buffer.alloc(32, 7).toString('base64')}`;
const K2 = `k2:${Buffer.alloc(32, 9).toString('base64')}`;

describe('master key rotation covers webhook signing secrets', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ env: { MASTER_KEYS: K1, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } });
  });
  after(() => t?.close());

  it('after re-encrypt a box holding only the new key opens the current and the previous secret', async () => {
    const org = (await t.createOrg()).id;
    const admin = (await t.addMember(org, uniqueEmail('rot-admin'), 'admin')).token;
    const sub = dataOf(
      await t.call('POST', '/v1/webhook-subscriptions', {
        token: admin,
        org,
        body: { url: 'https://127.0.0.1:9/hook', event_types: ['member.added'] },
      }),
      201,
    );
    const first = sub.signing_secret as string;
    // A rotation leaves the first secret in previous_secret_sealed for the overlap window.
    const rotated = dataOf(await t.call('POST', `/v1/webhook-subscriptions/${sub.id}/rotate-secret`, { token: admin, org, body: {} }));
    const second = rotated.signing_secret as string;
    assert.notEqual(first, second);

    const read = async () =>
      (
        await t.db.query<{ secret_sealed: string; previous_secret_sealed: string }>(
          'select secret_sealed, previous_secret_sealed from webhook_subscriptions where id = $1',
          [sub.id],
        )
      ).rows[0]!;
    const onlyK2 = createSecretBox(parseMasterKeys(K2));
    const beforeRow = await read();
    assert.throws(() => onlyK2.open(beforeRow.secret_sealed), SecretKeyError, 'before: sealed under k1');

    const both = createSecretBox(parseMasterKeys(`${K2},${K1}`));
    const out = await runCommand(t.db, ['providers', 're-encrypt'], { secrets: async () => both });
    assert.match(out, /webhook secrets: 2 re-encrypted, 0 already current/);
    const row = await read();
    assert.equal(onlyK2.open(row.secret_sealed), second);
    assert.equal(onlyK2.open(row.previous_secret_sealed), first);
    assert.equal(onlyK2.keyIdOf(row.secret_sealed), 'k2');

    // Running it again changes nothing.
    assert.match(
      await runCommand(t.db, ['providers', 're-encrypt'], { secrets: async () => both }),
      /webhook secrets: 0 re-encrypted, 2 already current/,
    );
  });
});
