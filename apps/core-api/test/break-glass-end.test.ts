import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

// Ending a break-glass session early (the console's "End session"): the reads stop at once, the clinic's
// trail records it, only its owner can end it, and the table stays append-only for everything else.

describe('ending a break-glass session', () => {
  let t: TestApp;
  let org: { id: string };
  let su: string;
  let admin: string;

  before(async () => {
    t = await startTestApp();
    org = await t.createOrg();
    su = await t.superadmin(uniqueEmail('bg-end-su'));
    admin = (await t.addMember(org.id, uniqueEmail('admin'), 'admin')).token;
    await t.addPatient(org.id, uniqueEmail('patient'));
  });
  after(() => t.close());

  const open = async (token = su, minutes = 60) =>
    dataOf(
      await t.call('POST', '/v1/break-glass/sessions', {
        token,
        body: {
          organization_id: org.id,
          scope: 'patient_list',
          reason_category: 'support_ticket',
          reason_text: 'Checking a duplicate record',
          expires_in_minutes: minutes,
        },
      }),
      201,
    );
  const list = () => t.call('GET', `/v1/console/organizations/${org.id}/patients`, { token: su });

  it('ends the session now: the next read is 410 naming the end, and the clinic sees break_glass.ended', async () => {
    const s = await open();
    assert.equal(s.ended_at, null);
    assert.equal((await list()).statusCode, 200);
    const ended = dataOf(await t.call('POST', `/v1/break-glass/sessions/${s.id}/end`, { token: su }));
    assert.equal(ended.status, 'expired');
    assert.ok(ended.ended_at);
    const err = assertError(await list(), 410, 'break_glass_expired');
    assert.match(err.message, /was ended at/);
    assert.equal(err.elevation.scope, 'patient_list');
    // Ending again changes nothing and answers the session as it is.
    const again = dataOf(await t.call('POST', `/v1/break-glass/sessions/${s.id}/end`, { token: su }));
    assert.equal(again.ended_at, ended.ended_at);
    const log = dataOf(await t.call('GET', '/v1/audit-logs?action=break_glass.ended', { token: admin, org: org.id }));
    assert.equal(log.length, 1);
    assert.equal(log[0].entity_id, s.id);
    assert.equal(log[0].action_context, 'break_glass');
  });

  it("an open session still governs after another one was ended; another superadmin's session is 404", async () => {
    const long = await open(su, 120);
    const short = await open(su, 30);
    dataOf(await t.call('POST', `/v1/break-glass/sessions/${long.id}/end`, { token: su }));
    assert.equal((await list()).statusCode, 200, 'the 30-minute session is still open');
    const other = await t.superadmin(uniqueEmail('bg-end-other'));
    assertError(await t.call('POST', `/v1/break-glass/sessions/${short.id}/end`, { token: other }), 404, 'not_found');
    assertError(await t.call('POST', `/v1/break-glass/sessions/${short.id}/end`, { token: admin }), 403, 'forbidden');
  });

  it('the table stays append-only: no other column changes, no delete, and ended_at is set only once', async () => {
    const s = await open();
    await assert.rejects(
      t.db.query(`update break_glass_sessions set reason_text = 'rewritten history' where id = $1`, [s.id]),
      /append-only/,
    );
    await assert.rejects(t.db.query(`delete from break_glass_sessions where id = $1`, [s.id]), /append-only/);
    await t.db.query(`update break_glass_sessions set ended_at = now() where id = $1`, [s.id]);
    await assert.rejects(t.db.query(`update break_glass_sessions set ended_at = null where id = $1`, [s.id]), /append-only/);
  });
});
