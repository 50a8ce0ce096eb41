import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

/**
 * Sorting members by email reads memberships.email_sort (migration 0011), a copy kept in step by
 * triggers. It must follow the users row: members added by an email that never signed in, and emails
 * that change afterwards (anonymisation, a corrected address).
 */
describe('members sorted by email follow the users rows', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  it('orders by the current, case-insensitive email, including invited members and changed emails', async () => {
    const org = await t.createOrg();
    const admin = await t.addMember(org.id, `m-${uniqueEmail('admin')}`, 'admin');
    const url = `/v1/organizations/${org.id}/members?sort=email`;
    const emails = async () => (dataOf(await t.call('GET', url, { token: admin.token })) as { email: string }[]).map((m) => m.email);

    // Invited by email (no sign-in yet): the row is created by the add, and sorted with the others.
    const invited = `A-${uniqueEmail('invited')}`.toLowerCase();
    dataOf(
      await t.call('POST', `/v1/organizations/${org.id}/members`, {
        token: admin.token,
        body: { email: invited, role_code: 'specialist' },
      }),
      201,
    );
    const signedIn = await t.addMember(org.id, `z-${uniqueEmail('staff')}`, 'specialist');
    const before = await emails();
    assert.deepEqual(before, [...before].sort(), 'sorted by email');
    assert.equal(before[0], invited);

    // The last one changes its email to sort first.
    const renamed = `0-${uniqueEmail('renamed')}`;
    await t.db.query('update users set email = $2 where id = $1', [signedIn.userId, renamed]);
    const afterRename = await emails();
    assert.equal(afterRename[0], renamed);
    assert.deepEqual(afterRename, [...afterRename].sort());
    const desc = (dataOf(await t.call('GET', `${url.replace('email', '-email')}`, { token: admin.token })) as { email: string }[]).map(
      (m) => m.email,
    );
    assert.deepEqual(desc, [...afterRename].reverse());
  });
});
