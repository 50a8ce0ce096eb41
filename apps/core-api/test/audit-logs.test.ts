import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, MISSING_UUID, startTestApp, TEMPLATE_GRANTS, uniqueEmail, type TestApp } from './helpers.ts';

// GET /v1/audit-logs, /{id}, /export (spec 4.5; 2.7 audit_log.view_org and export.csv; 4.1 list conventions).

describe('audit-log API', () => {
  let t: TestApp;
  let org: { id: string };
  let orgB: { id: string };
  let admin: string;
  let adminId: string;
  let adminB: string;
  let specialist: string;
  let auditorNoExport: string;

  before(async () => {
    t = await startTestApp();
    org = await t.createOrg();
    orgB = await t.createOrg();
    ({ token: admin, userId: adminId } = await t.addMember(org.id, uniqueEmail('admin'), 'admin'));
    adminB = (await t.addMember(orgB.id, uniqueEmail('admin-b'), 'admin')).token;
    specialist = (await t.addMember(org.id, uniqueEmail('spec'), 'specialist')).token;
    const su = await t.superadmin();
    dataOf(
      await t.call('POST', `/v1/organizations/${org.id}/roles`, {
        token: su,
        body: { code: 'auditor', name: 'Auditor', permissions: ['audit_log.view_org'] },
      }),
      201,
    );
    auditorNoExport = (await t.addMember(org.id, uniqueEmail('auditor'), 'auditor')).token;
    for (const name of ['=HYPERLINK("x")', 'Plain room']) {
      dataOf(await t.call('POST', `/v1/organizations/${org.id}/locations`, { token: admin, body: { name, timezone: 'UTC' } }), 201);
    }
    dataOf(
      await t.call('POST', `/v1/organizations/${orgB.id}/locations`, { token: adminB, body: { name: 'B room', timezone: 'UTC' } }),
      201,
    );
  });
  after(() => t.close());

  const get = (url: string, token: string, o = org.id) => t.call('GET', url, { token, org: o });

  it('admins hold export.csv by default (migration 0030)', () => {
    assert.ok(TEMPLATE_GRANTS.admin!.includes('export.csv'));
  });

  it("lists the organization's entries only, newest first, with filters", async () => {
    const res = await get('/v1/audit-logs?entity_type=location', admin);
    const body = res.json();
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(body.pagination.total, 2);
    assert.ok(body.data.every((e: { organization_id: string }) => e.organization_id === org.id));
    assert.ok(new Date(body.data[0].created_at) >= new Date(body.data[1].created_at));
    assert.equal(dataOf(await get(`/v1/audit-logs?actor_user_id=${adminId}&action=location.created`, admin)).length, 2);
    assert.equal(dataOf(await get(`/v1/audit-logs?actor_user_id=${MISSING_UUID}`, admin)).length, 0);
    assert.equal(dataOf(await get('/v1/audit-logs?created_at_before=2000-01-01', admin)).length, 0);
    const err = assertError(
      await get('/v1/audit-logs?actor_user_id=nope&created_at_after=yesterday&sort=ip', admin),
      422,
      'validation_failed',
    );
    assert.ok(err.fields.sort || (err.fields.actor_user_id && err.fields.created_at_after));
    const one = body.data[0];
    assert.equal(dataOf(await get(`/v1/audit-logs/${one.id}`, admin)).id, one.id);
    assertError(await get(`/v1/audit-logs/${one.id}`, adminB, orgB.id), 404, 'not_found');
  });

  it('needs audit_log.view_org; superadmins must go through break-glass for an organization', async () => {
    assertError(await get('/v1/audit-logs', specialist), 403, 'forbidden');
    const su = await t.superadmin();
    assert.match(assertError(await get('/v1/audit-logs', su), 403, 'forbidden').message, /break-glass/);
    // Without an organization: the platform trail.
    const platform = dataOf(await t.call('GET', '/v1/audit-logs', { token: su }));
    assert.ok(platform.every((e: { organization_id: string | null }) => e.organization_id === null));
  });

  it('exports CSV: needs export.csv and audit_log.view_org, escapes formulas, audits the export', async () => {
    assertError(await get('/v1/audit-logs/export', auditorNoExport), 403, 'forbidden');
    assertError(await get('/v1/audit-logs/export', specialist), 403, 'forbidden');
    const res = await get('/v1/audit-logs/export?entity_type=location', admin);
    assert.equal(res.statusCode, 200, res.body);
    assert.match(String(res.headers['content-type']), /^text\/csv/);
    assert.match(String(res.headers['content-disposition']), /attachment; filename="audit-log-/);
    const lines = res.body.trim().split('\n');
    assert.equal(
      lines[0],
      'id,created_at,organization_id,actor_user_id,action,entity_type,entity_id,action_context,break_glass_id,ip,data,chain_seq,row_hash',
    );
    assert.equal(lines.length, 3);
    assert.ok(
      !/(^|,)[=+@-]/m.test(
        lines
          .slice(1)
          .join('\n')
          .replace(/"[^"]*"/g, 'q'),
      ),
      'no cell starts like a formula',
    );
    assert.equal(dataOf(await get('/v1/audit-logs?action=audit_log.exported', admin)).length, 1);
  });
});
