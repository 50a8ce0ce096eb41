import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyRequest } from 'fastify';
import { requireConsent } from '../src/platform/gates.ts';
import { startTestApp, uniqueEmail, type TestApp, assertError, dataOf } from './helpers.ts';

// Consent (spec 2.8 catalog and ledger, 3.2 transitions and cascades, 4.6 routes and rules, 6.2
// consent_changed audit entries, 7 errors). The re-consent gate has its own database below: a
// published platform version of a required purpose applies to every caller of that database.

const MISSING = '01900000-0000-7000-8000-000000000000';
/** What the database says when the ledger refuses a change: a privilege, the guard trigger or a policy. */
const REFUSED = /permission denied|append-only|only the withdrawal|already withdrawn|row-level security/;

const text = (s = 'Text') => ({ en: `${s} (en)`, ro: `${s} (ro)` });

describe('consents', () => {
  let t: TestApp;
  let su: string;
  let orgA: { id: string };
  let orgB: { id: string };
  let adminA: string;
  let specialistA: string;
  let adminB: string;
  let patient: { token: string; userId: string };
  let other: { token: string; userId: string };

  const publishPlatform = (code: string, body: unknown = { body_translations: text(code) }, token = su) =>
    t.call('POST', `/v1/admin/consent-purposes/${code}/versions`, { token, body });
  const publishOrg = (token: string, orgId: string, code: string, body: unknown = { body_translations: text(code) }) =>
    t.call('POST', `/v1/organizations/${orgId}/consent-purposes/${code}/versions`, { token, body });
  const grantMine = (token: string, grants: unknown[]) => t.call('POST', '/v1/me/consents', { token, body: { grants } });
  const withdrawMine = (token: string, id: string, body: unknown = {}) => t.call('POST', `/v1/me/consents/${id}/withdraw`, { token, body });
  const mine = (token: string) => t.call('GET', '/v1/me/consents', { token });
  const g = (organization_id: string | null, purpose_code: string, purpose_version = 1, source = 'self_toggle', extra: object = {}) => ({
    organization_id,
    purpose_code,
    purpose_version,
    source,
    ...extra,
  });
  const patientRowId = async (orgId: string, userId: string) =>
    (await t.db.query<{ id: string }>('select id from patients where organization_id = $1 and user_id = $2', [orgId, userId])).rows[0]!.id;
  const ledgerCount = async (userId: string) =>
    (await t.db.query<{ n: number }>('select count(*)::int as n from consent_ledger where patient_profile_id = $1', [userId])).rows[0]!.n;
  const consentAudits = async (entityId: string) =>
    (
      await t.db.query<{ action: string; organization_id: string | null; actor_user_id: string; data: any }>(
        `select action, organization_id, actor_user_id, data from audit_logs where entity_id = $1 order by created_at, id`,
        [entityId],
      )
    ).rows;

  before(async () => {
    t = await startTestApp();
    su = await t.superadmin();
    orgA = await t.createOrg({ name: 'Clinic A' });
    orgB = await t.createOrg({ name: 'Clinic B' });
    adminA = (await t.addMember(orgA.id, uniqueEmail('admin-a'), 'admin')).token;
    specialistA = (await t.addMember(orgA.id, uniqueEmail('spec-a'), 'specialist')).token;
    adminB = (await t.addMember(orgB.id, uniqueEmail('admin-b'), 'admin')).token;
    patient = await t.addPatient(orgA.id, uniqueEmail('patient'));
    other = await t.addPatient(orgA.id, uniqueEmail('other'));
    // Platform defaults of non-required purposes: they do not gate anything.
    for (const code of ['marketing_email', 'marketing_sms', 'profile_sharing', 'analytics']) dataOf(await publishPlatform(code), 201);
  });
  after(() => t.close());

  describe('catalog (listConsentPurposes) and versions', () => {
    it('lists the seeded purposes of spec 2.8 with scope, legal basis, withdrawable iff consent, required iff not consent', async () => {
      const data = dataOf(await t.call('GET', '/v1/consent-purposes', { token: patient.token }));
      const byCode = new Map<string, any>(data.map((p: any) => [p.code, p]));
      const expected: Record<string, [string, string]> = {
        platform_terms: ['platform', 'contract'],
        platform_privacy_notice: ['platform', 'legitimate_interest'],
        org_terms: ['org', 'contract'],
        org_privacy_notice: ['org', 'legal_obligation'],
        marketing_email: ['org', 'consent'],
        marketing_sms: ['org', 'consent'],
        analytics: ['org', 'consent'],
        ai_processing: ['org', 'consent'],
        profile_sharing: ['org', 'consent'],
        telemedicine: ['org', 'consent'],
        video_recording: ['org', 'consent'],
        biometric_capture: ['org', 'consent'],
        biometric: ['org', 'consent'],
        // Migration 0081: the platform's treatment_specific_* purpose that treatment plans can require (spec 2.8).
        treatment_specific_home_exercise: ['org', 'consent'],
      };
      assert.deepEqual([...byCode.keys()].sort(), Object.keys(expected).sort());
      for (const [code, [scope, basis]] of Object.entries(expected)) {
        const p = byCode.get(code);
        assert.equal(p.scope, scope, code);
        assert.equal(p.legal_basis, basis, code);
        assert.equal(p.withdrawable, basis === 'consent', code);
        assert.equal(p.required, basis !== 'consent', code);
      }
      assert.equal(byCode.get('platform_terms').latest, null, 'nothing published: nothing to accept');
      const me = byCode.get('marketing_email');
      assert.equal(me.latest.version, 1);
      assert.deepEqual(me.latest.body_translations, text('marketing_email'));
      assert.equal(me.organization_version, null);
    });

    it('a clinic override (publishOrgConsentVersion) continues the numbering and is what the catalog shows in its scope only', async () => {
      const org = await t.createOrg();
      const admin = await t.addMember(org.id, uniqueEmail('admin'), 'admin');
      const res = await publishOrg(admin.token, org.id, 'marketing_sms', { body_translations: { en: 'Clinic SMS', de: 'Klinik SMS' } });
      const v = dataOf(res, 201);
      assert.equal(v.version, 2, 'platform default is v1: the override is v2');
      assert.equal(v.organization_id, org.id);
      assert.equal(v.published_by_principal_id, admin.userId);
      assert.match(v.published_at, /Z$/);
      const again = dataOf(await publishOrg(admin.token, org.id, 'marketing_sms'), 201);
      assert.equal(again.version, 3);
      const scoped = dataOf(await t.call('GET', '/v1/consent-purposes', { token: admin.token, org: org.id })).find(
        (p: any) => p.code === 'marketing_sms',
      );
      assert.equal(scoped.platform_version.version, 1);
      assert.equal(scoped.organization_version.version, 3);
      assert.equal(scoped.latest.id, again.id);
      // Another organization in scope sees the platform default.
      const elsewhere = dataOf(await t.call('GET', '/v1/consent-purposes', { token: adminA, org: orgA.id })).find(
        (p: any) => p.code === 'marketing_sms',
      );
      assert.equal(elsewhere.organization_version, null);
      assert.equal(elsewhere.latest.version, 1);
      const audit = await consentAudits(v.id);
      assert.deepEqual(
        audit.map((a) => [a.action, a.organization_id, a.actor_user_id]),
        [['consent_purpose_version.published', org.id, admin.userId]],
      );
    });

    it("shows a clinic's texts to anyone signed in (onboarding) but who published them only to those who run them", async () => {
      const org = await t.createOrg();
      const admin = await t.addMember(org.id, uniqueEmail('admin'), 'admin');
      const v = dataOf(await publishOrg(admin.token, org.id, 'marketing_sms'), 201);
      const member = await t.addPatient(org.id, uniqueEmail('member-patient'));
      const outsider = await t.token(uniqueEmail('outsider'));
      dataOf(await t.call('GET', '/v1/me', { token: outsider }));
      const entry = async (token: string) =>
        dataOf(await t.call('GET', '/v1/consent-purposes', { token, org: org.id })).find((p: any) => p.code === 'marketing_sms');
      // Staff of the clinic see who published its override; not who published the platform text.
      const staffView = await entry(admin.token);
      assert.equal(staffView.organization_version.published_by_principal_id, admin.userId);
      assert.equal(staffView.platform_version.published_by_principal_id, null);
      // A superadmin sees both.
      const operatorView = await entry(su);
      assert.equal(operatorView.organization_version.published_by_principal_id, admin.userId);
      assert.match(operatorView.platform_version.published_by_principal_id, /^[0-9a-f-]{36}$/);
      // A patient of the clinic and a signed-in stranger (the onboarding path) read the same texts, without staff ids.
      for (const token of [member.token, outsider, adminB]) {
        const view = await entry(token);
        assert.equal(view.latest.id, v.id);
        assert.deepEqual(view.latest.body_translations, v.body_translations);
        assert.equal(view.organization_version.published_by_principal_id, null);
        assert.equal(view.latest.published_by_principal_id, null);
        assert.equal(view.platform_version.published_by_principal_id, null);
      }
    });

    it('overrides: consents.manage only (403), org-scope purposes only (409), known codes (404), an en text (400)', async () => {
      assertError(await publishOrg(specialistA, orgA.id, 'marketing_email'), 403, 'forbidden');
      assertError(await publishOrg(patient.token, orgA.id, 'marketing_email'), 403, 'forbidden');
      assertError(await publishOrg(adminB, orgA.id, 'marketing_email'), 403, 'forbidden');
      assertError(await publishOrg(adminA, orgA.id, 'platform_terms'), 409, 'purpose_not_overridable');
      assertError(await publishOrg(adminA, orgA.id, 'no_such_purpose'), 404, 'not_found');
      const err = assertError(
        await publishOrg(adminA, orgA.id, 'marketing_email', { body_translations: { ro: 'doar ro' } }),
        400,
        'validation_error',
      );
      assert.ok(err.fields.body_translations);
      assertError(await publishOrg(adminA, orgA.id, 'marketing_email', { body_translations: { en: '   ' } }), 400, 'validation_error');
      assertError(await publishOrg(adminA, orgA.id, 'marketing_email', {}), 400, 'validation_error');
      assertError(await publishOrg(adminA, MISSING, 'marketing_email'), 404, 'organization_not_found');
    });

    it('platform versions (publishPlatformConsentVersion): superadmins only', async () => {
      assertError(await publishPlatform('ai_processing', undefined, adminA), 403, 'forbidden');
      assertError(await publishPlatform('ai_processing', undefined, patient.token), 403, 'forbidden');
      const v = dataOf(await publishPlatform('ai_processing'), 201);
      assert.equal(v.organization_id, null);
      assert.equal(v.version, 1);
      assert.equal(dataOf(await publishPlatform('ai_processing'), 201).version, 2);
      assertError(await publishPlatform('nope'), 404, 'not_found');
    });

    it('versions are append-only and overrides exist only for org-scope purposes, at the database level', async () => {
      await assert.rejects(t.db.query(`update consent_purpose_versions set version = version + 10`), /append-only/);
      await assert.rejects(t.db.query(`delete from consent_purpose_versions`), /append-only/);
      await assert.rejects(
        t.db.query(
          `insert into consent_purpose_versions (purpose_code, organization_id, version, body_translations, published_by_principal_id)
                    values ('platform_terms', $1, 1, '{"en":"x"}', $2)`,
          [orgA.id, patient.userId],
        ),
        /platform-scope/,
      );
      await assert.rejects(
        t.db.query(
          `insert into consent_purpose_versions (purpose_code, version, body_translations, published_by_principal_id)
                    values ('marketing_email', 1, '{"en":"dup"}', $1)`,
          [patient.userId],
        ),
        /duplicate key|unique/,
      );
      // A staff member without consents.manage cannot insert an override by crafted SQL either.
      await assert.rejects(
        t.db.withScope({ role: 'app_rls', principalId: patient.userId, orgId: orgA.id, permissions: [] }, (tx) =>
          tx.query(
            `insert into consent_purpose_versions (purpose_code, organization_id, version, body_translations, published_by_principal_id)
                    values ('marketing_email', $1, 50, '{"en":"x"}', $2)`,
            [orgA.id, patient.userId],
          ),
        ),
        /row-level security/,
      );
    });
  });

  describe('grants (grantMyConsents) and rules of 4.6', () => {
    it('grants a batch: 201 with the inserted rows, the caller as grantor, the request ip, one consent_changed entry per row', async () => {
      const rows = dataOf(
        await grantMine(patient.token, [g(orgA.id, 'marketing_email'), g(orgA.id, 'analytics', 1, 'signup_checkbox')]),
        201,
      );
      assert.equal(rows.length, 2);
      const [a, b] = rows;
      assert.equal(a.purpose_code, 'marketing_email');
      assert.equal(a.organization_id, orgA.id);
      assert.equal(a.patient_profile_id, patient.userId);
      assert.equal(a.granted_by_principal_id, patient.userId);
      assert.equal(a.purpose_version, 1);
      assert.equal(a.source, 'self_toggle');
      assert.equal(a.source_form_id, null);
      assert.equal(a.granted_via_ip, '127.0.0.1');
      assert.equal(a.withdrawn_at, null);
      assert.match(a.granted_at, /Z$/);
      assert.equal(b.source, 'signup_checkbox');
      for (const row of rows) {
        const audit = await consentAudits(row.id);
        assert.equal(audit.length, 1);
        assert.equal(audit[0]!.action, 'consent_changed');
        assert.equal(audit[0]!.organization_id, orgA.id);
        assert.equal(audit[0]!.actor_user_id, patient.userId);
        assert.equal(audit[0]!.data.change, 'granted');
        assert.equal(audit[0]!.data.purpose_code, row.purpose_code);
      }
    });

    it('source is one of the five values; source_form_id only with source form', async () => {
      const p = await t.addPatient(orgA.id, uniqueEmail('p'));
      assertError(await grantMine(p.token, [g(orgA.id, 'marketing_email', 1, 'sms')]), 400, 'validation_error');
      const err = assertError(
        await grantMine(p.token, [g(orgA.id, 'marketing_email', 1, 'api', { source_form_id: MISSING })]),
        400,
        'validation_error',
      );
      assert.ok(err.fields['grants.0.source_form_id'], JSON.stringify(err));
      const [row] = dataOf(await grantMine(p.token, [g(orgA.id, 'marketing_email', 1, 'form', { source_form_id: MISSING })]), 201);
      assert.equal(row.source, 'form');
      assert.equal(row.source_form_id, MISSING);
      for (const source of ['api', 'staff_action']) dataOf(await grantMine(p.token, [g(orgA.id, 'marketing_sms', 1, source)]), 201);
    });

    it('purpose_version must be the latest published version; unknown purposes and wrong scopes are 400', async () => {
      const p = await t.addPatient(orgA.id, uniqueEmail('p'));
      let err = assertError(await grantMine(p.token, [g(orgA.id, 'marketing_email', 2)]), 400, 'validation_error');
      assert.match(err.fields['grants.0.purpose_version'], /latest/);
      err = assertError(await grantMine(p.token, [g(orgA.id, 'telemedicine')]), 400, 'validation_error');
      assert.match(err.fields['grants.0.purpose_version'], /no version/);
      err = assertError(await grantMine(p.token, [g(orgA.id, 'nope')]), 400, 'validation_error');
      assert.ok(err.fields['grants.0.purpose_code']);
      err = assertError(await grantMine(p.token, [g(null, 'marketing_email')]), 400, 'validation_error');
      assert.ok(err.fields['grants.0.organization_id']);
      err = assertError(await grantMine(p.token, [g(orgA.id, 'platform_terms')]), 400, 'validation_error');
      assert.ok(err.fields['grants.0.organization_id']);
      assertError(await grantMine(p.token, []), 400, 'validation_error');
      assertError(
        await t.call('POST', '/v1/me/consents', { token: p.token, rawBody: '{"grants":', headers: { 'content-type': 'application/json' } }),
        400,
        'invalid_body',
      );
      assert.equal(await ledgerCount(p.userId), 0);
    });

    it('the batch is atomic: one invalid grant records nothing', async () => {
      const p = await t.addPatient(orgA.id, uniqueEmail('p'));
      const err = assertError(
        await grantMine(p.token, [g(orgA.id, 'marketing_email'), g(orgA.id, 'marketing_sms', 9)]),
        400,
        'validation_error',
      );
      assert.ok(err.fields['grants.1.purpose_version']);
      assertError(await grantMine(p.token, [g(orgA.id, 'marketing_email'), g(orgB.id, 'marketing_email')]), 403, 'forbidden');
      assertError(await grantMine(p.token, [g(orgA.id, 'marketing_email'), g(orgA.id, 'marketing_email')]), 400, 'validation_error');
      assert.equal(await ledgerCount(p.userId), 0);
    });

    it('organization grants need the caller to be a patient there (403), staff included', async () => {
      assertError(await grantMine(patient.token, [g(orgB.id, 'marketing_email')]), 403, 'forbidden');
      assertError(await grantMine(adminA, [g(orgA.id, 'marketing_email')]), 403, 'forbidden');
      // Crafted SQL: row-level security says the same.
      await assert.rejects(
        t.db.withScope({ role: 'app_rls', principalId: patient.userId, orgId: orgB.id, permissions: [] }, (tx) =>
          tx.query(
            `insert into consent_ledger (organization_id, patient_profile_id, purpose_code, purpose_version, source, granted_by_principal_id)
                    values ($1, $2, 'marketing_email', 1, 'api', $2)`,
            [orgB.id, patient.userId],
          ),
        ),
        /row-level security/,
      );
      await assert.rejects(
        t.db.withScope({ role: 'app_rls', principalId: patient.userId, orgId: orgA.id, permissions: [] }, (tx) =>
          tx.query(
            `insert into consent_ledger (organization_id, patient_profile_id, purpose_code, purpose_version, source, granted_by_principal_id)
                    values ($1, $2, 'marketing_email', 1, 'api', $3)`,
            [orgA.id, other.userId, patient.userId],
          ),
        ),
        /row-level security/,
      );
    });
  });

  describe('states of 3.2 through GET /v1/me/consents and withdraw', () => {
    it('none -> active -> withdrawn -> active: grouped shape with current and history', async () => {
      const p = await t.addPatient(orgA.id, uniqueEmail('p'));
      let groups = dataOf(await mine(p.token));
      const find = (gs: any[], org: string | null, code: string) => gs.find((x) => x.organization_id === org && x.purpose_code === code);
      // Platform purposes and the org purposes of every clinic where the caller is a patient.
      assert.ok(find(groups, null, 'platform_terms'));
      assert.equal(find(groups, orgA.id, 'marketing_email').current, null);
      assert.deepEqual(find(groups, orgA.id, 'marketing_email').history, []);
      assert.equal(find(groups, orgB.id, 'marketing_email'), undefined);
      const me = find(groups, orgA.id, 'marketing_email');
      assert.equal(me.scope, 'org');
      assert.equal(me.legal_basis, 'consent');
      assert.equal(me.withdrawable, true);
      assert.equal(find(groups, orgA.id, 'org_terms').withdrawable, false);

      const [first] = dataOf(await grantMine(p.token, [g(orgA.id, 'marketing_email')]), 201);
      groups = dataOf(await mine(p.token));
      assert.deepEqual(find(groups, orgA.id, 'marketing_email').current, {
        id: first.id,
        purpose_version: 1,
        granted_at: first.granted_at,
        source: 'self_toggle',
      });

      const withdrawn = dataOf(await withdrawMine(p.token, first.id, { withdrawal_reason: 'too many emails' }));
      assert.equal(withdrawn.id, first.id);
      assert.equal(withdrawn.withdrawal_reason, 'too many emails');
      assert.equal(withdrawn.withdrawn_by_principal_id, p.userId);
      assert.match(withdrawn.withdrawn_at, /Z$/);
      groups = dataOf(await mine(p.token));
      assert.equal(find(groups, orgA.id, 'marketing_email').current, null);
      assert.equal(find(groups, orgA.id, 'marketing_email').history.length, 1);

      const [second] = dataOf(await grantMine(p.token, [g(orgA.id, 'marketing_email')]), 201);
      groups = dataOf(await mine(p.token));
      const group = find(groups, orgA.id, 'marketing_email');
      assert.equal(group.current.id, second.id);
      assert.deepEqual(
        group.history.map((r: any) => r.id),
        [second.id, first.id],
        'old rows stay as history, newest first',
      );
      const audit = await consentAudits(first.id);
      assert.deepEqual(
        audit.map((a) => a.data.change),
        ['granted', 'withdrawn'],
      );
      assert.equal(audit[1]!.data.withdrawal_reason, 'too many emails');
    });

    it("withdraw: 404 when no ACTIVE row of the caller has the id (already withdrawn, someone else's, unknown)", async () => {
      const p = await t.addPatient(orgA.id, uniqueEmail('p'));
      const [row] = dataOf(await grantMine(p.token, [g(orgA.id, 'analytics')]), 201);
      assertError(await withdrawMine(other.token, row.id), 404, 'not_found');
      assertError(await withdrawMine(adminA, row.id), 404, 'not_found');
      assertError(await withdrawMine(p.token, MISSING), 404, 'not_found');
      dataOf(await withdrawMine(p.token, row.id));
      assertError(await withdrawMine(p.token, row.id), 404, 'not_found');
      assertError(await withdrawMine(p.token, row.id, { withdrawal_reason: 'x'.repeat(1001) }), 400, 'validation_error');
    });

    it('withdraw: 409 not_withdrawable for a purpose that does not rest on consent; the row stays active', async () => {
      const org = await t.createOrg();
      const admin = await t.addMember(org.id, uniqueEmail('admin'), 'admin');
      const p = await t.addPatient(org.id, uniqueEmail('p'));
      const v = dataOf(await publishOrg(admin.token, org.id, 'org_terms'), 201);
      const [row] = dataOf(await grantMine(p.token, [g(org.id, 'org_terms', v.version, 'signup_checkbox')]), 201);
      assertError(await withdrawMine(p.token, row.id), 409, 'not_withdrawable');
      const group = dataOf(await mine(p.token)).find((x: any) => x.organization_id === org.id && x.purpose_code === 'org_terms');
      assert.equal(group.current.id, row.id);
      assert.deepEqual(
        (await consentAudits(row.id)).map((a) => a.data.change),
        ['granted'],
      );
    });

    it('re-accepting a newer version supersedes; withdrawing then ends every active row of that purpose', async () => {
      const org = await t.createOrg();
      const admin = await t.addMember(org.id, uniqueEmail('admin'), 'admin');
      const p = await t.addPatient(org.id, uniqueEmail('p'));
      const [v1] = dataOf(await grantMine(p.token, [g(org.id, 'profile_sharing')]), 201);
      const v2 = dataOf(await publishOrg(admin.token, org.id, 'profile_sharing'), 201);
      assertError(await grantMine(p.token, [g(org.id, 'profile_sharing', 1)]), 400, 'validation_error');
      const [r2] = dataOf(await grantMine(p.token, [g(org.id, 'profile_sharing', v2.version)]), 201);
      let gs = dataOf(await mine(p.token)).find((x: any) => x.organization_id === org.id && x.purpose_code === 'profile_sharing');
      assert.equal(gs.current.id, r2.id);
      assert.equal(gs.current.purpose_version, 2);
      dataOf(await withdrawMine(p.token, v1.id));
      gs = dataOf(await mine(p.token)).find((x: any) => x.organization_id === org.id && x.purpose_code === 'profile_sharing');
      assert.equal(gs.current, null);
      assert.ok(gs.history.every((r: any) => r.withdrawn_at !== null));
    });

    it('cascade: withdrawing profile_sharing sets profile_shared false at that organization only, in the same transaction', async () => {
      const p = await t.addPatient(orgA.id, uniqueEmail('p'));
      await t.db.query(`insert into patients (organization_id, user_id) values ($1, $2)`, [orgB.id, p.userId]);
      await t.db.query(`update patients set profile_shared = true where user_id = $1`, [p.userId]);
      const [row] = dataOf(await grantMine(p.token, [g(orgA.id, 'profile_sharing')]), 201);
      dataOf(await withdrawMine(p.token, row.id));
      const { rows } = await t.db.query<{ organization_id: string; profile_shared: boolean }>(
        'select organization_id, profile_shared from patients where user_id = $1',
        [p.userId],
      );
      assert.equal(rows.find((r) => r.organization_id === orgA.id)!.profile_shared, false);
      assert.equal(rows.find((r) => r.organization_id === orgB.id)!.profile_shared, true);
    });
  });

  describe('staff routes', () => {
    const base = (orgId: string, patientId: string) => `/v1/organizations/${orgId}/patients/${patientId}/consents`;

    it('grantPatientConsents: consents.manage; source staff_action; the staff member as grantor; audited', async () => {
      const p = await t.addPatient(orgA.id, uniqueEmail('p'));
      const pid = await patientRowId(orgA.id, p.userId);
      const body = { grants: [{ purpose_code: 'marketing_email', purpose_version: 1 }] };
      assertError(await t.call('POST', `${base(orgA.id, pid)}/grant`, { token: specialistA, body }), 403, 'forbidden');
      assertError(await t.call('POST', `${base(orgA.id, pid)}/grant`, { token: p.token, body }), 403, 'forbidden');
      assertError(await t.call('POST', `${base(orgA.id, pid)}/grant`, { token: adminB, body }), 403, 'forbidden');
      const [row] = dataOf(await t.call('POST', `${base(orgA.id, pid)}/grant`, { token: adminA, body }), 201);
      assert.equal(row.source, 'staff_action');
      assert.equal(row.patient_profile_id, p.userId);
      assert.equal(row.organization_id, orgA.id);
      assert.equal(row.granted_by_principal_id, (await t.call('GET', '/v1/me', { token: adminA })).json().data.id);
      const audit = await consentAudits(row.id);
      assert.equal(audit[0]!.action, 'consent_changed');
      assert.equal(audit[0]!.data.source, 'staff_action');
      // Platform purposes, other organizations and stale versions are refused.
      assertError(
        await t.call('POST', `${base(orgA.id, pid)}/grant`, {
          token: adminA,
          body: { grants: [{ purpose_code: 'platform_terms', purpose_version: 1 }] },
        }),
        400,
        'validation_error',
      );
      assertError(
        await t.call('POST', `${base(orgA.id, pid)}/grant`, {
          token: adminA,
          body: { grants: [{ organization_id: orgB.id, purpose_code: 'marketing_email', purpose_version: 1 }] },
        }),
        400,
        'validation_error',
      );
      assertError(
        await t.call('POST', `${base(orgA.id, pid)}/grant`, {
          token: adminA,
          body: { grants: [{ purpose_code: 'marketing_email', purpose_version: 3 }] },
        }),
        400,
        'validation_error',
      );
      assertError(
        await t.call('POST', `${base(orgA.id, pid)}/grant`, {
          token: adminA,
          body: { grants: [{ purpose_code: 'marketing_email', purpose_version: 1, source: 'api' }] },
        }),
        400,
        'validation_error',
      );
    });

    it('a patient id of another organization, or unknown, is 404', async () => {
      const pB = await t.addPatient(orgB.id, uniqueEmail('pb'));
      const pidB = await patientRowId(orgB.id, pB.userId);
      const body = { grants: [{ purpose_code: 'marketing_email', purpose_version: 1 }] };
      assertError(await t.call('POST', `${base(orgA.id, pidB)}/grant`, { token: adminA, body }), 404, 'not_found');
      assertError(await t.call('GET', base(orgA.id, pidB), { token: adminA }), 404, 'not_found');
      assertError(await t.call('GET', base(orgA.id, MISSING), { token: adminA }), 404, 'not_found');
      assertError(await t.call('GET', base(MISSING, MISSING), { token: adminA }), 404, 'organization_not_found');
    });

    it('listPatientConsents: consents.view_org; the grouped shape limited to the organization', async () => {
      const p = await t.addPatient(orgA.id, uniqueEmail('p'));
      await t.db.query(`insert into patients (organization_id, user_id) values ($1, $2)`, [orgB.id, p.userId]);
      const pid = await patientRowId(orgA.id, p.userId);
      const [row] = dataOf(await grantMine(p.token, [g(orgA.id, 'marketing_sms')]), 201);
      dataOf(await grantMine(p.token, [g(orgB.id, 'marketing_sms')]), 201);
      assertError(await t.call('GET', base(orgA.id, pid), { token: specialistA }), 403, 'forbidden');
      assertError(await t.call('GET', base(orgA.id, pid), { token: p.token }), 403, 'forbidden');
      const groups = dataOf(await t.call('GET', base(orgA.id, pid), { token: adminA }));
      assert.ok(groups.every((x: any) => x.organization_id === orgA.id));
      assert.ok(!groups.some((x: any) => x.scope === 'platform'));
      const sms = groups.find((x: any) => x.purpose_code === 'marketing_sms');
      assert.equal(sms.current.id, row.id);
      assert.equal(sms.history.length, 1);
      // The superadmin passes every permission check, under break-glass (spec 4.7).
      await t.breakGlass(su, orgA.id, ['patient_detail']);
      assert.equal(dataOf(await t.call('GET', base(orgA.id, pid), { token: su })).length, groups.length);
    });

    it('withdrawPatientConsent: consents.manage; 404 for a row of another patient; 409 not_withdrawable; cascades', async () => {
      const p = await t.addPatient(orgA.id, uniqueEmail('p'));
      const pid = await patientRowId(orgA.id, p.userId);
      const otherPid = await patientRowId(orgA.id, other.userId);
      await t.db.query(`update patients set profile_shared = true where id = $1`, [pid]);
      const [row] = dataOf(await grantMine(p.token, [g(orgA.id, 'profile_sharing')]), 201);
      assertError(await t.call('POST', `${base(orgA.id, pid)}/${row.id}/withdraw`, { token: specialistA, body: {} }), 403, 'forbidden');
      assertError(await t.call('POST', `${base(orgA.id, otherPid)}/${row.id}/withdraw`, { token: adminA, body: {} }), 404, 'not_found');
      const w = dataOf(
        await t.call('POST', `${base(orgA.id, pid)}/${row.id}/withdraw`, { token: adminA, body: { withdrawal_reason: 'asked by phone' } }),
      );
      assert.equal(w.withdrawal_reason, 'asked by phone');
      assert.notEqual(w.withdrawn_by_principal_id, p.userId);
      assertError(await t.call('POST', `${base(orgA.id, pid)}/${row.id}/withdraw`, { token: adminA, body: {} }), 404, 'not_found');
      const shared = (await t.db.query<{ profile_shared: boolean }>('select profile_shared from patients where id = $1', [pid])).rows[0]!
        .profile_shared;
      assert.equal(shared, false);
      assert.deepEqual(
        (await consentAudits(row.id)).map((a) => a.data.change),
        ['granted', 'withdrawn'],
      );
    });
  });

  describe('the ledger is append-only at the database level', () => {
    let row: { id: string };
    before(async () => {
      [row] = dataOf(await grantMine(patient.token, [g(orgA.id, 'marketing_sms')]), 201);
    });
    const snapshot = async () => (await t.db.query('select * from consent_ledger where id = $1', [row.id])).rows[0];
    const roles = () => [
      { role: 'app_rls' as const, principalId: patient.userId, orgId: orgA.id, permissions: ['consents.manage', 'consents.view_org'] },
      { role: 'app_bypass' as const, principalId: patient.userId, orgId: orgA.id, permissions: [] },
    ];

    it('no application role can rewrite or delete a row, even with crafted SQL; nor can the owner', async () => {
      const before = await snapshot();
      for (const scope of roles()) {
        for (const sql of [
          `update consent_ledger set purpose_code = 'analytics' where id = $1`,
          `update consent_ledger set purpose_version = 99 where id = $1`,
          `update consent_ledger set granted_at = now() - interval '1 year' where id = $1`,
          `update consent_ledger set purpose_code = 'analytics', withdrawn_at = now(), withdrawn_by_principal_id = patient_profile_id where id = $1`,
          `delete from consent_ledger where id = $1`,
        ]) {
          await assert.rejects(
            t.db.withScope(scope, (tx) => tx.query(sql, [row.id])),
            REFUSED,
            `${scope.role}: ${sql}`,
          );
        }
        await assert.rejects(
          t.db.withScope(scope, (tx) => tx.query('truncate consent_ledger')),
          REFUSED,
          `${scope.role}: truncate`,
        );
      }
      await assert.rejects(
        t.db.query(`update consent_ledger set purpose_code = 'analytics' where id = $1`, [row.id]),
        /only the withdrawal/,
      );
      await assert.rejects(t.db.query(`delete from consent_ledger where id = $1`, [row.id]), /append-only/);
      await assert.rejects(t.db.query('truncate consent_ledger'), /append-only/);
      assert.deepEqual(await snapshot(), before);
    });

    it('a withdrawal can be recorded once; after that the row is frozen', async () => {
      const [scope] = roles();
      await t.db.withScope(scope!, (tx) =>
        tx.query(
          `update consent_ledger set withdrawn_at = now(), withdrawn_by_principal_id = $2, withdrawal_reason = 'sql' where id = $1`,
          [row.id, patient.userId],
        ),
      );
      const frozen = await snapshot();
      assert.ok(frozen!.withdrawn_at);
      for (const s of roles()) {
        await assert.rejects(
          t.db.withScope(s, (tx) =>
            tx.query(`update consent_ledger set withdrawn_at = now(), withdrawn_by_principal_id = $2 where id = $1`, [
              row.id,
              patient.userId,
            ]),
          ),
          REFUSED,
          s.role,
        );
        await assert.rejects(
          t.db.withScope(s, (tx) => tx.query(`update consent_ledger set withdrawal_reason = 'changed' where id = $1`, [row.id])),
          REFUSED,
          s.role,
        );
      }
      await assert.rejects(
        t.db.query(
          `update consent_ledger set withdrawn_at = null, withdrawn_by_principal_id = null, withdrawal_reason = null where id = $1`,
          [row.id],
        ),
        /already withdrawn/,
      );
      assert.deepEqual(await snapshot(), frozen);
    });

    it('row-level security: a person reads own rows; staff need consents.view_org at the organization', async () => {
      const count = (scope: any) =>
        t.db.withScope(
          scope,
          async (tx) => (await tx.query<{ n: number }>('select count(*)::int as n from consent_ledger where id = $1', [row.id])).rows[0]!.n,
        );
      const staff = (await t.call('GET', '/v1/me', { token: specialistA })).json().data.id;
      assert.equal(await count({ role: 'app_rls', principalId: patient.userId, orgId: orgB.id, permissions: [] }), 1);
      assert.equal(await count({ role: 'app_rls', principalId: staff, orgId: orgA.id, permissions: [] }), 0);
      assert.equal(await count({ role: 'app_rls', principalId: staff, orgId: orgA.id, permissions: ['consents.view_org'] }), 1);
      assert.equal(await count({ role: 'app_rls', principalId: staff, orgId: orgB.id, permissions: ['consents.view_org'] }), 0);
    });
  });

  describe('patient onboarding (onboardPatient)', () => {
    const onboard = (token: string, organization_id: string, grants: unknown[]) =>
      t.call('POST', '/v1/portal/onboard', { token, body: { organization_id, grants } });

    it('409 privacy_notice_missing until the clinic publishes its own org_privacy_notice; then patient row and grants in one go', async () => {
      const org = await t.createOrg();
      const admin = await t.addMember(org.id, uniqueEmail('admin'), 'admin');
      const email = uniqueEmail('newcomer');
      const token = await t.token(email);
      const err = assertError(await onboard(token, org.id, [g(org.id, 'marketing_email')]), 409, 'privacy_notice_missing');
      assert.match(err.message, /privacy notice/);
      const me = dataOf(await t.call('GET', '/v1/me', { token }));
      assert.equal(await ledgerCount(me.id), 0);
      const notice = dataOf(await publishOrg(admin.token, org.id, 'org_privacy_notice'), 201);
      // The grants must accept the clinic's notice; nothing is created otherwise.
      const bad = assertError(await onboard(token, org.id, [g(org.id, 'marketing_email')]), 400, 'validation_error');
      assert.match(bad.fields.grants, /org_privacy_notice/);
      assert.equal((await t.db.query('select 1 from patients where user_id = $1', [me.id])).rows.length, 0);
      const res = dataOf(
        await onboard(token, org.id, [
          g(org.id, 'org_privacy_notice', notice.version, 'signup_checkbox'),
          g(org.id, 'marketing_email', 1, 'signup_checkbox'),
        ]),
        201,
      );
      assert.equal(res.patient_status, 'created');
      assert.equal(res.organization_id, org.id);
      assert.deepEqual(
        res.consents.map((c: any) => c.purpose_code),
        ['org_privacy_notice', 'marketing_email'],
      );
      assert.equal(res.patient_id, await patientRowId(org.id, me.id));
      const audit = await consentAudits(res.patient_id);
      assert.deepEqual(
        audit.map((a) => a.action),
        ['patient.onboarded'],
      );
      // A patient now, and not stopped by the gate: the notice is accepted.
      const after = dataOf(await t.call('GET', '/v1/me', { token, org: org.id }));
      assert.equal(after.is_patient_at_current_org, true);
      dataOf(await t.call('GET', `/v1/organizations/${org.id}`, { token }));
      // A soft-deleted record is revived; a live one is kept.
      await t.db.query('update patients set deleted_at = now() where id = $1', [res.patient_id]);
      const revived = dataOf(await onboard(token, org.id, [g(org.id, 'org_privacy_notice', notice.version)]), 201);
      assert.equal(revived.patient_status, 'revived');
      assert.equal(revived.patient_id, res.patient_id);
      const again = dataOf(await onboard(token, org.id, [g(org.id, 'org_privacy_notice', notice.version)]), 201);
      assert.equal(again.patient_status, 'existing');
      assertError(await onboard(token, MISSING, [g(MISSING, 'org_privacy_notice', 1)]), 404, 'organization_not_found');
    });
  });

  describe('feature-level gate (requireConsent)', () => {
    /** The gate on a request whose context and transaction are those the pipeline would give this caller. */
    async function run(purpose: string, who: { token: string }, orgId: string | null) {
      const me = await t.call('GET', '/v1/me', { token: who.token, ...(orgId ? { org: orgId } : {}) });
      assert.equal(me.statusCode, 200);
      const ctxUser = me.json().data;
      const request = {
        ctx: {
          principalId: ctxUser.id,
          isSuperadmin: ctxUser.is_superadmin,
          orgId: ctxUser.current_organization_id,
        },
        inTx: <T>(fn: (tx: any) => Promise<T>) =>
          t.db.withScope(
            {
              role: ctxUser.is_superadmin ? 'app_bypass' : 'app_rls',
              principalId: ctxUser.id,
              orgId: orgId ?? '00000000-0000-0000-0000-000000000000',
              permissions: [],
            },
            fn,
          ),
      } as unknown as FastifyRequest;
      return requireConsent(purpose)(request);
    }

    it('403 consent_required with missing_purpose without an active grant; passes with one', async () => {
      const p = await t.addPatient(orgA.id, uniqueEmail('p'));
      await assert.rejects(run('analytics', p, orgA.id), (err: any) => {
        assert.equal(err.statusCode, 403);
        assert.equal(err.code, 'consent_required');
        assert.equal(err.extra.missing_purpose, 'analytics');
        return true;
      });
      const [row] = dataOf(await grantMine(p.token, [g(orgA.id, 'analytics')]), 201);
      await run('analytics', p, orgA.id);
      // Granted at A, not at B; no organization in scope: missing.
      await assert.rejects(run('analytics', p, null), (err: any) => err.code === 'consent_required');
      dataOf(await withdrawMine(p.token, row.id));
      await assert.rejects(run('analytics', p, orgA.id), (err: any) => err.extra.missing_purpose === 'analytics');
      await run('analytics', { token: su }, orgA.id);
    });
  });
});

describe('re-consent gate (412)', () => {
  let t: TestApp;
  let su: string;
  let org: { id: string };
  let orgB: { id: string };
  let admin: { token: string; userId: string };
  let patient: { token: string; userId: string };
  let patientB: { token: string; userId: string };

  const accept = (token: string, grants: unknown[]) => t.call('POST', '/v1/me/consents', { token, body: { grants } });
  const g = (organization_id: string | null, purpose_code: string, purpose_version: number) => ({
    organization_id,
    purpose_code,
    purpose_version,
    source: 'signup_checkbox',
  });
  const publishPlatform = (code: string) =>
    t.call('POST', `/v1/admin/consent-purposes/${code}/versions`, { token: su, body: { body_translations: { en: `${code} text` } } });

  before(async () => {
    t = await startTestApp();
    su = await t.superadmin();
    org = await t.createOrg();
    orgB = await t.createOrg();
    admin = await t.addMember(org.id, uniqueEmail('admin'), 'admin');
    patient = await t.addPatient(org.id, uniqueEmail('patient'));
    patientB = await t.addPatient(orgB.id, uniqueEmail('patient-b'));
  });
  after(() => t.close());

  it('nothing published: nobody is gated', async () => {
    dataOf(await t.call('GET', `/v1/organizations/${org.id}`, { token: patient.token }));
    dataOf(await t.call('GET', `/v1/organizations/${org.id}`, { token: admin.token }));
  });

  it('platform_terms v1: 412 listing it on gated routes, exempt routes answer, accepting lifts it; v2 asks again', async () => {
    const v1 = dataOf(await publishPlatform('platform_terms'), 201);
    assert.equal(v1.version, 1);
    for (const who of [patient, admin]) {
      const err = assertError(await t.call('GET', `/v1/organizations/${org.id}`, { token: who.token }), 412, 'consent_required');
      assert.deepEqual(err.missing, [{ purpose_code: 'platform_terms', organization_id: null, version: 1 }]);
      assertError(await t.call('GET', '/v1/organizations', { token: who.token }), 412, 'consent_required');
      // Reachable to read and accept.
      dataOf(await t.call('GET', '/v1/me', { token: who.token }));
      dataOf(await t.call('GET', '/v1/me/clinics', { token: who.token }));
      dataOf(await t.call('PATCH', '/v1/me', { token: who.token, body: { preferred_language: 'ro' } }));
      const catalog = dataOf(await t.call('GET', '/v1/consent-purposes', { token: who.token }));
      assert.equal(catalog.find((p: any) => p.code === 'platform_terms').latest.version, 1);
      dataOf(await t.call('GET', '/v1/me/consents', { token: who.token }));
    }
    // Superadmins are not gated; anonymous callers still get 401 first; public routes are untouched.
    dataOf(await t.call('GET', `/v1/organizations/${org.id}`, { token: su }));
    assertError(await t.call('GET', `/v1/organizations/${org.id}`), 401, 'unauthorized');
    assert.equal((await t.call('GET', '/v1/public/system-info')).statusCode, 200);

    dataOf(await accept(patient.token, [g(null, 'platform_terms', 1)]), 201);
    dataOf(await t.call('GET', `/v1/organizations/${org.id}`, { token: patient.token }));
    assertError(await t.call('GET', `/v1/organizations/${org.id}`, { token: admin.token }), 412, 'consent_required');
    dataOf(await accept(admin.token, [g(null, 'platform_terms', 1)]), 201);
    dataOf(await t.call('GET', `/v1/organizations/${org.id}`, { token: admin.token }));

    dataOf(await publishPlatform('platform_terms'), 201);
    const err = assertError(await t.call('GET', `/v1/organizations/${org.id}`, { token: patient.token }), 412, 'consent_required');
    assert.deepEqual(err.missing, [{ purpose_code: 'platform_terms', organization_id: null, version: 2 }]);
    assertError(await accept(patient.token, [g(null, 'platform_terms', 1)]), 400, 'validation_error');
    dataOf(await accept(patient.token, [g(null, 'platform_terms', 2)]), 201);
    dataOf(await t.call('GET', `/v1/organizations/${org.id}`, { token: patient.token }));
    // Everyone else accepts v2 too, for the tests below.
    for (const who of [admin, patientB]) dataOf(await accept(who.token, [g(null, 'platform_terms', 2)]), 201);
    // Non-consent purposes cannot be withdrawn to escape or reset the gate.
    const mine = dataOf(await t.call('GET', '/v1/me/consents', { token: patient.token }));
    const current = mine.find((x: any) => x.purpose_code === 'platform_terms').current;
    assertError(
      await t.call('POST', `/v1/me/consents/${current.id}/withdraw`, { token: patient.token, body: {} }),
      409,
      'not_withdrawable',
    );
  });

  it('org purposes: only for patients of the organization in scope; staff are not subject to them', async () => {
    const v = dataOf(
      await t.call('POST', `/v1/organizations/${org.id}/consent-purposes/org_privacy_notice/versions`, {
        token: admin.token,
        body: { body_translations: { en: 'Clinic privacy notice', ro: 'Nota de informare' } },
      }),
      201,
    );
    assert.equal(v.version, 1);
    const err = assertError(await t.call('GET', `/v1/organizations/${org.id}`, { token: patient.token }), 412, 'consent_required');
    assert.deepEqual(err.missing, [{ purpose_code: 'org_privacy_notice', organization_id: org.id, version: 1 }]);
    // The same patient with no organization in scope (nil UUID) is not asked for the clinic's purposes.
    dataOf(await t.call('GET', '/v1/organizations', { token: patient.token, org: '00000000-0000-0000-0000-000000000000' }));
    // Staff of the clinic, and patients of other clinics, are not asked.
    dataOf(await t.call('GET', `/v1/organizations/${org.id}`, { token: admin.token }));
    dataOf(await t.call('GET', `/v1/organizations/${orgB.id}`, { token: patientB.token }));
    dataOf(await accept(patient.token, [g(org.id, 'org_privacy_notice', 1)]), 201);
    dataOf(await t.call('GET', `/v1/organizations/${org.id}`, { token: patient.token }));
  });

  it('a platform default of an org purpose applies at every clinic; a clinic override then takes over', async () => {
    dataOf(await publishPlatform('org_terms'), 201);
    let err = assertError(await t.call('GET', `/v1/organizations/${orgB.id}`, { token: patientB.token }), 412, 'consent_required');
    assert.deepEqual(err.missing, [{ purpose_code: 'org_terms', organization_id: orgB.id, version: 1 }]);
    err = assertError(await t.call('GET', `/v1/organizations/${org.id}`, { token: patient.token }), 412, 'consent_required');
    assert.deepEqual(err.missing, [{ purpose_code: 'org_terms', organization_id: org.id, version: 1 }]);
    dataOf(await accept(patient.token, [g(org.id, 'org_terms', 1)]), 201);
    dataOf(await t.call('GET', `/v1/organizations/${org.id}`, { token: patient.token }));
    const o = dataOf(
      await t.call('POST', `/v1/organizations/${org.id}/consent-purposes/org_terms/versions`, {
        token: admin.token,
        body: { body_translations: { en: 'Clinic terms' } },
      }),
      201,
    );
    assert.equal(o.version, 2);
    err = assertError(await t.call('GET', `/v1/organizations/${org.id}`, { token: patient.token }), 412, 'consent_required');
    assert.deepEqual(err.missing, [{ purpose_code: 'org_terms', organization_id: org.id, version: 2 }]);
    dataOf(await accept(patient.token, [g(org.id, 'org_terms', 2)]), 201);
    dataOf(await t.call('GET', `/v1/organizations/${org.id}`, { token: patient.token }));
    // Several missing purposes are listed together, platform first.
    dataOf(await publishPlatform('platform_privacy_notice'), 201);
    err = assertError(await t.call('GET', `/v1/organizations/${orgB.id}`, { token: patientB.token }), 412, 'consent_required');
    assert.deepEqual(err.missing, [
      { purpose_code: 'platform_privacy_notice', organization_id: null, version: 1 },
      { purpose_code: 'org_terms', organization_id: orgB.id, version: 1 },
    ]);
  });

  it('onboarding: a platform default org_privacy_notice does not count, the clinic must publish its own', async () => {
    dataOf(await publishPlatform('org_privacy_notice'), 201);
    const fresh = await t.createOrg();
    const token = await t.token(uniqueEmail('newcomer'));
    assertError(
      await t.call('POST', '/v1/portal/onboard', {
        token,
        body: { organization_id: fresh.id, grants: [g(fresh.id, 'org_privacy_notice', 1)] },
      }),
      409,
      'privacy_notice_missing',
    );
  });
});
