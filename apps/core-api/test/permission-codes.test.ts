import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

// Permission codes gate what their names say (spec 2.7, 4.2).

describe('permission codes and what they gate', () => {
  let t: TestApp;
  let org: string;
  let admin: string;

  const roleWith = async (code: string, permissions: string[]) => {
    dataOf(await t.call('POST', `/v1/organizations/${org}/roles`, { token: admin, body: { code, name: code, permissions } }), 201);
    return (await t.addMember(org, uniqueEmail(code), code)).token;
  };
  const publish = (token: string, code: string) =>
    t.call('POST', `/v1/organizations/${org}/consent-purposes/${code}/versions`, {
      token,
      body: { body_translations: { en: `${code} text` } },
    });

  before(async () => {
    t = await startTestApp();
    org = (await t.createOrg()).id;
    admin = (await t.addMember(org, uniqueEmail('codes-admin'), 'admin')).token;
  });
  after(() => t.close());

  it("organizations.manage_privacy_notice gates publishing the clinic's notice; consents.manage its other purposes", async () => {
    const consentsOnly = await roleWith('consents_only', ['consents.manage']);
    const noticeOnly = await roleWith('notice_only', ['organizations.manage_privacy_notice']);
    assertError(await publish(consentsOnly, 'org_privacy_notice'), 403, 'forbidden');
    dataOf(await publish(consentsOnly, 'marketing_sms'), 201);
    dataOf(await publish(noticeOnly, 'org_privacy_notice'), 201);
    assertError(await publish(noticeOnly, 'marketing_sms'), 403, 'forbidden');
    // The admin role keeps both (the migration gave the notice code to every role that held consents.manage).
    dataOf(await publish(admin, 'org_privacy_notice'), 201);
  });

  it('the permissions table is read like the other directory tables: organizations.view_directory', async () => {
    const count = (permissions: string[]) =>
      t.db.withScope({ role: 'app_rls', principalId: null, orgId: org, permissions }, async (tx) => {
        const { rows } = await tx.query<{ n: number }>('select count(*)::int as n from permissions');
        return rows[0]!.n;
      });
    assert.equal(await count([]), 0);
    assert.ok((await count(['organizations.view_directory'])) > 20);
  });
});
