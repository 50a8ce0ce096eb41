import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { NIL_UUID } from '@clinic/db';
import { startTestApp, uniqueEmail, type TestApp, assertError, dataOf, MISSING_UUID } from './helpers.ts';

// Cascades of spec 3.2 started by the person: leaving a clinic (leaveClinic) and deleting the account
// (deleteMe). Each runs in one transaction with its audit entries; the ledger and audit trail stay.

describe('consent cascades: leaving a clinic and deleting the account', () => {
  let t: TestApp;
  let su: string;
  let orgA: { id: string };
  let orgB: { id: string };
  let adminA: { token: string; userId: string };
  let adminB: { token: string; userId: string };
  const versions: Record<string, number> = {};

  const g = (organization_id: string | null, purpose_code: string) => ({
    organization_id,
    purpose_code,
    purpose_version: versions[`${organization_id ?? ''}:${purpose_code}`] ?? versions[`:${purpose_code}`] ?? 1,
    source: 'signup_checkbox',
  });
  const grant = (token: string, grants: unknown[]) => t.call('POST', '/v1/me/consents', { token, body: { grants } });
  const active = async (userId: string) =>
    (
      await t.db.query<{ id: string; organization_id: string | null; purpose_code: string }>(
        'select id, organization_id, purpose_code from consent_ledger where patient_profile_id = $1 and withdrawn_at is null order by purpose_code',
        [userId],
      )
    ).rows;
  const ledger = async (userId: string) =>
    (await t.db.query<any>('select * from consent_ledger where patient_profile_id = $1 order by created_at, id', [userId])).rows;
  const audits = async (where: string, params: unknown[]) =>
    (
      await t.db.query<any>(
        `select action, organization_id, actor_user_id, entity_type, entity_id, data from audit_logs where ${where} order by created_at, id`,
        params,
      )
    ).rows;
  const patientRow = async (orgId: string, userId: string) =>
    (await t.db.query<any>('select * from patients where organization_id = $1 and user_id = $2', [orgId, userId])).rows[0];

  /** A patient of A (and optionally B) who accepted everything published and some consents. */
  async function richPatient(alsoB = false) {
    const p = await t.addPatient(orgA.id, uniqueEmail('patient'));
    dataOf(await grant(p.token, [g(null, 'platform_terms'), g(null, 'platform_privacy_notice')]), 201);
    dataOf(
      await grant(p.token, [
        g(orgA.id, 'org_terms'),
        g(orgA.id, 'org_privacy_notice'),
        g(orgA.id, 'marketing_email'),
        g(orgA.id, 'profile_sharing'),
      ]),
      201,
    );
    await t.db.query('update patients set profile_shared = true where organization_id = $1 and user_id = $2', [orgA.id, p.userId]);
    if (alsoB) {
      await t.db.query('insert into patients (organization_id, user_id) values ($1, $2)', [orgB.id, p.userId]);
      dataOf(await grant(p.token, [g(orgB.id, 'org_terms'), g(orgB.id, 'org_privacy_notice'), g(orgB.id, 'marketing_sms')]), 201);
    }
    return p;
  }

  before(async () => {
    t = await startTestApp();
    su = await t.superadmin();
    orgA = await t.createOrg({ name: 'Clinic A' });
    orgB = await t.createOrg({ name: 'Clinic B' });
    adminA = await t.addMember(orgA.id, uniqueEmail('admin-a'), 'admin');
    adminB = await t.addMember(orgB.id, uniqueEmail('admin-b'), 'admin');
    for (const code of ['platform_terms', 'platform_privacy_notice', 'org_terms', 'marketing_email', 'marketing_sms', 'profile_sharing']) {
      const v = dataOf(
        await t.call('POST', `/v1/admin/consent-purposes/${code}/versions`, { token: su, body: { body_translations: { en: code } } }),
        201,
      );
      versions[`:${code}`] = v.version;
    }
    for (const org of [orgA, orgB]) {
      const admin = org === orgA ? adminA : adminB;
      dataOf(await grant(admin.token, [g(null, 'platform_terms'), g(null, 'platform_privacy_notice')]), 201);
      const v = dataOf(
        await t.call('POST', `/v1/organizations/${org.id}/consent-purposes/org_privacy_notice/versions`, {
          token: admin.token,
          body: { body_translations: { en: 'notice' } },
        }),
        201,
      );
      versions[`${org.id}:org_privacy_notice`] = v.version;
    }
  });
  after(() => t.close());

  describe('leaveClinic (POST /v1/me/clinics/{org_id}/leave)', () => {
    it('soft-deletes the patient row there, withdraws every consent there (terms and notice too), audits each, in one go', async () => {
      const p = await richPatient(true);
      const before = await ledger(p.userId);
      const res = dataOf(await t.call('POST', `/v1/me/clinics/${orgA.id}/leave`, { token: p.token }));
      const row = await patientRow(orgA.id, p.userId);
      assert.equal(res.patient_id, row.id);
      assert.equal(res.organization_id, orgA.id);
      assert.ok(row.deleted_at, 'soft-deleted');
      assert.equal(row.profile_shared, false);
      assert.equal(res.withdrawn_consent_ids.length, 4);
      // Platform consents and clinic B's stay active; nothing at A does.
      assert.deepEqual(
        (await active(p.userId)).map((r) => [r.organization_id, r.purpose_code]),
        [
          [orgB.id, 'marketing_sms'],
          [orgB.id, 'org_privacy_notice'],
          [orgB.id, 'org_terms'],
          [null, 'platform_privacy_notice'],
          [null, 'platform_terms'],
        ],
      );
      const after = await ledger(p.userId);
      assert.equal(after.length, before.length, 'no row added or removed: the ledger keeps its history');
      for (const r of after.filter((x: any) => x.organization_id === orgA.id)) {
        assert.ok(r.withdrawn_at);
        assert.equal(r.withdrawn_by_principal_id, p.userId);
        assert.equal(r.withdrawal_reason, 'left_clinic');
      }
      const entries = await audits('actor_user_id = $1 and organization_id = $2', [p.userId, orgA.id]);
      const changed = entries.filter((e) => e.action === 'consent_changed' && e.data.change === 'withdrawn');
      assert.deepEqual(changed.map((e) => e.entity_id).sort(), [...res.withdrawn_consent_ids].sort());
      for (const e of changed) {
        assert.equal(e.data.change, 'withdrawn');
        assert.equal(e.data.withdrawal_reason, 'left_clinic');
      }
      const left = entries.filter((e) => e.action === 'patient.left');
      assert.equal(left.length, 1);
      assert.equal(left[0].entity_id, row.id);
      // No longer a patient there: portal access and the gate's org purposes are gone.
      const me = dataOf(await t.call('GET', '/v1/me', { token: p.token }));
      assert.deepEqual(me.patient_org_ids, [orgB.id]);
      assertError(await t.call('GET', `/v1/organizations/${orgA.id}`, { token: p.token }), 403, 'forbidden');
      // Leaving again, or a clinic never joined: 404 not_found; an unknown organization too.
      assertError(await t.call('POST', `/v1/me/clinics/${orgA.id}/leave`, { token: p.token }), 404, 'not_found');
      assertError(await t.call('POST', `/v1/me/clinics/${MISSING_UUID}/leave`, { token: p.token }), 404, 'not_found');
      assertError(await t.call('POST', `/v1/me/clinics/${orgA.id}/leave`, { token: adminA.token }), 404, 'not_found');
      assertError(await t.call('POST', `/v1/me/clinics/${orgA.id}/leave`), 401, 'unauthorized');
    });

    it('reachable while the re-consent gate would answer 412; re-onboarding revives the record and asks for the consents again', async () => {
      const p = await richPatient();
      const v = dataOf(
        await t.call('POST', '/v1/admin/consent-purposes/platform_terms/versions', {
          token: su,
          body: { body_translations: { en: 'terms v2' } },
        }),
        201,
      );
      versions[':platform_terms'] = v.version;
      try {
        assertError(await t.call('GET', `/v1/organizations/${orgA.id}`, { token: p.token }), 412, 'consent_required');
        dataOf(await t.call('POST', `/v1/me/clinics/${orgA.id}/leave`, { token: p.token }));
      } finally {
        // Everyone used below accepts the new terms.
        for (const who of [adminA, adminB]) dataOf(await grant(who.token, [g(null, 'platform_terms')]), 201);
      }
      const back = dataOf(
        await t.call('POST', '/v1/portal/onboard', {
          token: p.token,
          body: {
            organization_id: orgA.id,
            grants: [g(null, 'platform_terms'), g(orgA.id, 'org_terms'), g(orgA.id, 'org_privacy_notice')],
          },
        }),
        201,
      );
      assert.equal(back.patient_status, 'revived');
      dataOf(await t.call('GET', `/v1/organizations/${orgA.id}`, { token: p.token }));
    });

    it('is one transaction: a failing audit write leaves the patient row and the consents as they were', async () => {
      const p = await richPatient();
      const activeBefore = await active(p.userId);
      // A trigger that refuses the patient.left audit entry, on this patient only.
      await t.db.exec(`
        create or replace function pg_temp_fail_left() returns trigger language plpgsql as $$
        begin
          if new.action = 'patient.left' and new.actor_user_id = '${p.userId}' then raise exception 'injected failure'; end if;
          return new;
        end $$;
        create trigger zz_fail_left before insert on audit_logs for each row execute function pg_temp_fail_left();`);
      try {
        const res = await t.call('POST', `/v1/me/clinics/${orgA.id}/leave`, { token: p.token });
        assert.equal(res.statusCode, 500, res.body);
      } finally {
        await t.db.exec('drop trigger zz_fail_left on audit_logs; drop function pg_temp_fail_left();');
      }
      assert.equal((await patientRow(orgA.id, p.userId)).deleted_at, null);
      assert.deepEqual(await active(p.userId), activeBefore);
      assert.equal(
        (await audits(`actor_user_id = $1 and action = 'consent_changed' and data->>'change' = 'withdrawn'`, [p.userId])).length,
        0,
      );
    });
  });

  describe('deleteMe (DELETE /v1/me)', () => {
    it('withdraws every consent, soft-deletes patient rows everywhere, anonymises the user; ledger and audit stay', async () => {
      const p = await richPatient(true);
      const email = (await t.db.query<any>('select email from users where id = $1', [p.userId])).rows[0].email;
      const ledgerBefore = await ledger(p.userId);
      const auditBefore = (await audits('actor_user_id = $1', [p.userId])).length;
      await t.db.query(`update users set preferred_language = 'ro' where id = $1`, [p.userId]);
      dataOf(await t.call('DELETE', '/v1/me', { token: p.token }), 204);

      const user = (await t.db.query<any>('select * from users where id = $1', [p.userId])).rows[0];
      assert.equal(user.email, `deleted-${p.userId}@invalid`);
      assert.equal(user.external_subject, null);
      assert.equal(user.preferred_language, null);
      assert.equal(user.current_organization_id, null);
      assert.equal((await t.db.query('select 1 from users where lower(email) = lower($1)', [email])).rows.length, 0, 'the email is gone');
      for (const org of [orgA, orgB]) assert.ok((await patientRow(org.id, p.userId)).deleted_at);
      assert.deepEqual(await active(p.userId), []);
      const ledgerAfter = await ledger(p.userId);
      assert.equal(ledgerAfter.length, ledgerBefore.length);
      assert.ok(ledgerAfter.every((r: any) => r.withdrawal_reason === 'account_deleted' && r.withdrawn_by_principal_id === p.userId));
      assert.ok(ledgerAfter.some((r: any) => r.purpose_code === 'platform_terms' && r.organization_id === null));

      const entries = await audits('actor_user_id = $1', [p.userId]);
      assert.ok(entries.length >= auditBefore, 'audit rows are never removed');
      const changed = entries.filter((e) => e.action === 'consent_changed' && e.data.change === 'withdrawn');
      assert.deepEqual(changed.map((e) => e.entity_id).sort(), ledgerAfter.map((r: any) => r.id).sort());
      const deleted = entries.filter((e) => e.action === 'user.deleted');
      assert.equal(deleted.length, 1);
      assert.equal(deleted[0].organization_id, null);
      assert.equal(deleted[0].entity_id, p.userId);
      assert.deepEqual(
        entries
          .filter((e) => e.action === 'patient.deleted')
          .map((e) => e.organization_id)
          .sort(),
        [orgA.id, orgB.id].sort(),
      );

      // The identity no longer reaches this row: signing in again starts a new, empty account.
      const again = dataOf(await t.call('GET', '/v1/me', { token: p.token }));
      assert.notEqual(again.id, p.userId);
      assert.equal(again.email, email);
      assert.deepEqual(again.patient_org_ids, []);
      assert.deepEqual(again.memberships, []);
    });

    it('staff: memberships are removed; the last admin of an organization is refused with 409 last_admin, nothing changes', async () => {
      const org = await t.createOrg();
      const admin = await t.addMember(org.id, uniqueEmail('sole-admin'), 'admin');
      const spec = await t.addMember(org.id, uniqueEmail('spec'), 'specialist');
      dataOf(await grant(admin.token, [g(null, 'platform_terms'), g(null, 'platform_privacy_notice')]), 201);
      dataOf(await grant(spec.token, [g(null, 'platform_terms'), g(null, 'platform_privacy_notice')]), 201);
      const err = assertError(await t.call('DELETE', '/v1/me', { token: admin.token }), 409, 'last_admin');
      assert.match(err.message, new RegExp(org.id));
      assert.equal((await t.db.query('select 1 from memberships where user_id = $1', [admin.userId])).rows.length, 1);
      assert.equal((await active(admin.userId)).length, 2);
      assert.notEqual(
        (await t.db.query<any>('select external_subject from users where id = $1', [admin.userId])).rows[0].external_subject,
        null,
      );

      dataOf(await t.call('DELETE', '/v1/me', { token: spec.token }), 204);
      assert.equal((await t.db.query('select 1 from memberships where user_id = $1', [spec.userId])).rows.length, 0);
      const removed = await audits(`action = 'member.removed' and entity_id = $1`, [spec.userId]);
      assert.deepEqual(
        removed.map((e) => e.organization_id),
        [org.id],
      );

      // With a second admin, the first may go.
      const second = await t.addMember(org.id, uniqueEmail('admin2'), 'admin');
      void second;
      dataOf(await t.call('DELETE', '/v1/me', { token: admin.token }), 204);
      assert.equal(
        (await t.db.query<any>('select email from users where id = $1', [admin.userId])).rows[0].email,
        `deleted-${admin.userId}@invalid`,
      );
    });

    it('is one transaction: a failing audit write changes nothing; reachable while consents are missing', async () => {
      const p = await richPatient();
      const activeBefore = await active(p.userId);
      await t.db.exec(`
        create or replace function pg_temp_fail_deleted() returns trigger language plpgsql as $$
        begin
          if new.action = 'user.deleted' and new.entity_id = '${p.userId}' then raise exception 'injected failure'; end if;
          return new;
        end $$;
        create trigger zz_fail_deleted before insert on audit_logs for each row execute function pg_temp_fail_deleted();`);
      try {
        assert.equal((await t.call('DELETE', '/v1/me', { token: p.token })).statusCode, 500);
      } finally {
        await t.db.exec('drop trigger zz_fail_deleted on audit_logs; drop function pg_temp_fail_deleted();');
      }
      assert.deepEqual(await active(p.userId), activeBefore);
      assert.equal((await patientRow(orgA.id, p.userId)).deleted_at, null);
      assert.notEqual(
        (await t.db.query<any>('select external_subject from users where id = $1', [p.userId])).rows[0].external_subject,
        null,
      );
      // Missing the latest platform terms does not stop a deletion.
      const v = dataOf(
        await t.call('POST', '/v1/admin/consent-purposes/platform_privacy_notice/versions', {
          token: su,
          body: { body_translations: { en: 'pn v2' } },
        }),
        201,
      );
      versions[':platform_privacy_notice'] = v.version;
      assertError(await t.call('GET', `/v1/organizations/${orgA.id}`, { token: p.token }), 412, 'consent_required');
      dataOf(await t.call('DELETE', '/v1/me', { token: p.token }), 204);
      assertError(await t.call('DELETE', '/v1/me'), 401, 'unauthorized');
    });

    it('application roles cannot run the cascades on someone else, even with crafted SQL', async () => {
      const victim = await richPatient();
      const attacker = await t.addPatient(orgA.id, uniqueEmail('attacker'));
      const scope = {
        role: 'app_rls' as const,
        principalId: attacker.userId,
        orgId: orgA.id,
        permissions: ['consents.manage', 'data.view_deleted'],
      };
      await assert.rejects(
        t.db.withScope(scope, (tx) => tx.query('select app.erase_user($1, null, $2)', [victim.userId, 'x'])),
        /erase_not_allowed/,
      );
      // A clinic erasure needs gdpr.erase_data at the organization in scope.
      await assert.rejects(
        t.db.withScope(scope, (tx) => tx.query('select app.erase_user($1, $2, $3)', [victim.userId, orgA.id, 'x'])),
        /erase_not_allowed/,
      );
      await assert.rejects(
        t.db.withScope({ ...scope, permissions: ['gdpr.erase_data'], orgId: orgB.id }, (tx) =>
          tx.query('select app.erase_user($1, $2, $3)', [victim.userId, orgA.id, 'x']),
        ),
        /erase_not_allowed/,
      );
      // The internal helper is not executable by the application roles; nor can they write patients or users.
      await assert.rejects(
        t.db.withScope(scope, (tx) => tx.query('select app.withdraw_all_consents($1, null, true, $1, $2)', [victim.userId, 'x'])),
        /permission denied/,
      );
      // No update policy on patients: the statement matches no row.
      const upd = await t.db.withScope(scope, (tx) =>
        tx.query('update patients set deleted_at = now() where user_id = $1', [victim.userId]),
      );
      assert.equal(upd.rowCount, 0);
      await assert.rejects(
        t.db.withScope(scope, (tx) => tx.query(`update users set email = 'x@invalid' where id = $1`, [victim.userId])),
        /permission denied/,
      );
      assert.equal((await active(victim.userId)).length, 6);
      assert.equal((await patientRow(orgA.id, victim.userId)).deleted_at, null);
    });
  });

  describe('soft-deleted rows are hidden without data.view_deleted (patients_read_org)', () => {
    it('staff reading patients as app_rls: a left patient is invisible without data.view_deleted, visible with it, never elsewhere', async () => {
      const p = await richPatient();
      const live = await t.addPatient(orgA.id, uniqueEmail('live'));
      dataOf(await t.call('POST', `/v1/me/clinics/${orgA.id}/leave`, { token: p.token }));
      const see = (permissions: string[], orgId = orgA.id) =>
        t.db.withScope({ role: 'app_rls', principalId: adminA.userId, orgId, permissions }, async (tx) =>
          (await tx.query<{ user_id: string }>('select user_id from patients where user_id = any($1)', [[p.userId, live.userId]])).rows
            .map((r) => r.user_id)
            .sort(),
        );
      assert.deepEqual(await see(['patients.view_org']), [live.userId]);
      assert.deepEqual(await see(['patients.view_org', 'data.view_deleted']), [p.userId, live.userId].sort());
      assert.deepEqual(await see(['data.view_deleted']), [], 'data.view_deleted alone reads nothing');
      assert.deepEqual(await see(['patients.view_org', 'data.view_deleted'], orgB.id), [], 'another organization in scope');
      // The person still reads its own (soft-deleted) row: it is theirs.
      const own = await t.db.withScope(
        { role: 'app_rls', principalId: p.userId, orgId: NIL_UUID, permissions: [] },
        async (tx) => (await tx.query<{ deleted_at: Date | null }>('select deleted_at from patients where user_id = $1', [p.userId])).rows,
      );
      assert.equal(own.length, 1);
      assert.ok(own[0]!.deleted_at);
    });
  });
});
