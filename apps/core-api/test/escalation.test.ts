import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, startTestApp, type TestApp, uniqueEmail } from './helpers.ts';

// No escalation inside an organization: nobody but a superadmin gives a role, or puts a permission into a
// role, that carries a permission they do not hold; nobody changes their own role. 403 forbidden, and
// nothing changes. Before the rule, a member holding only organizations.manage_members could make anyone
// (themself included) an admin and create roles with any permission.
describe('privilege escalation inside an organization', () => {
  let t: TestApp;
  let su: string;
  let orgId: string;
  let manager: { token: string; userId: string };
  let managerEmail: string;

  const members = () => t.call('GET', `/v1/organizations/${orgId}/members?limit=500`, { token: su });
  const roleOf = async (userId: string) =>
    (await members()).json().data.find((m: { user_id: string; role_code: string }) => m.user_id === userId)?.role_code;

  before(async () => {
    t = await startTestApp();
    su = await t.superadmin();
    orgId = (await t.createOrg()).id;
    for (const [code, permissions] of [
      ['member_manager', ['organizations.manage_members']],
      ['plain', []],
    ] as const) {
      dataOf(await t.call('POST', `/v1/organizations/${orgId}/roles`, { token: su, body: { code, name: code, permissions } }), 201);
    }
    managerEmail = uniqueEmail('manager');
    manager = await t.addMember(orgId, managerEmail, 'member_manager');
  });
  after(() => t?.close());

  it('a member manager cannot add someone as admin (a role carrying permissions it lacks); nobody is added', async () => {
    const before = (await members()).json().pagination.total;
    const email = uniqueEmail('would-be-admin');
    const err = assertError(
      await t.call('POST', `/v1/organizations/${orgId}/members`, { token: manager.token, body: { email, role_code: 'admin' } }),
      403,
      'forbidden',
    );
    assert.match(err.message, /organizations\.update/);
    assert.equal((await members()).json().pagination.total, before);
  });

  it('nor make itself admin, nor change its own role at all', async () => {
    assertError(
      await t.call('POST', `/v1/organizations/${orgId}/members`, {
        token: manager.token,
        body: { email: managerEmail, role_code: 'admin' },
      }),
      403,
      'forbidden',
    );
    const own = assertError(
      await t.call('POST', `/v1/organizations/${orgId}/members`, {
        token: manager.token,
        body: { email: managerEmail, role_code: 'plain' },
      }),
      403,
      'forbidden',
    );
    assert.match(own.message, /your own role/);
    assert.equal(await roleOf(manager.userId), 'member_manager');
  });

  it('can still give roles whose permissions it holds', async () => {
    const email = uniqueEmail('plain-member');
    dataOf(await t.call('POST', `/v1/organizations/${orgId}/members`, { token: manager.token, body: { email, role_code: 'plain' } }), 201);
    dataOf(
      await t.call('POST', `/v1/organizations/${orgId}/members`, { token: manager.token, body: { email, role_code: 'member_manager' } }),
      200,
    );
  });

  it('cannot create a role, or add to a role, a permission it does not hold; the role is unchanged', async () => {
    assertError(
      await t.call('POST', `/v1/organizations/${orgId}/roles`, {
        token: manager.token,
        body: { code: 'sneaky', name: 'Sneaky', permissions: ['organizations.manage_members', 'organizations.update'] },
      }),
      403,
      'forbidden',
    );
    const roles = (await t.call('GET', `/v1/organizations/${orgId}/roles?limit=500`, { token: su })).json().data as {
      id: string;
      code: string;
      permissions: string[];
    }[];
    assert.ok(!roles.some((r) => r.code === 'sneaky'), 'the refused role was created');
    const plain = roles.find((r) => r.code === 'plain')!;
    assertError(
      await t.call('PATCH', `/v1/organizations/${orgId}/roles/${plain.id}`, {
        token: manager.token,
        body: { permissions: ['data.view_deleted'] },
      }),
      403,
      'forbidden',
    );
    const after = (await t.call('GET', `/v1/organizations/${orgId}/roles?limit=500`, { token: su })).json().data as typeof roles;
    assert.deepEqual(after.find((r) => r.code === 'plain')!.permissions, []);
    // What it holds it may give: a role with manage_members only.
    dataOf(
      await t.call('POST', `/v1/organizations/${orgId}/roles`, {
        token: manager.token,
        body: { code: 'helper', name: 'Helper', permissions: ['organizations.manage_members'] },
      }),
      201,
    );
  });

  it('a superadmin grants anything', async () => {
    dataOf(
      await t.call('POST', `/v1/organizations/${orgId}/members`, {
        token: su,
        body: { email: uniqueEmail('new-admin'), role_code: 'admin' },
      }),
      201,
    );
  });
});
