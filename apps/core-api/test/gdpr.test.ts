import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyRequest } from 'fastify';
import { requireConsent } from '../src/platform/gates.ts';
import { NIL_UUID } from '@clinic/db';
import { startTestApp, uniqueEmail, type TestApp, assertError, dataOf, MISSING_UUID } from './helpers.ts';

// GDPR operations (spec 4.5 Audit and GDPR): restrict, erase, export (a job with progress).

describe('gdpr', () => {
  let t: TestApp;
  let su: string;
  let orgA: { id: string };
  let orgB: { id: string };
  let adminA: { token: string; userId: string };
  let adminB: { token: string; userId: string };
  let specialistA: { token: string; userId: string };
  let emailVersion: number;

  const post = (url: string, token: string, body: unknown, org?: string) => t.call('POST', url, { token, body, ...(org ? { org } : {}) });
  const patientRowId = async (orgId: string, userId: string) =>
    (await t.db.query<{ id: string }>('select id from patients where organization_id = $1 and user_id = $2', [orgId, userId])).rows[0]!.id;
  const audits = async (action: string, entityId: string) =>
    (
      await t.db.query<any>(
        'select organization_id, actor_user_id, data from audit_logs where action = $1 and entity_id = $2 order by created_at, id',
        [action, entityId],
      )
    ).rows;
  const grantEmail = (p: { token: string }, orgId: string) =>
    post('/v1/me/consents', p.token, {
      grants: [{ organization_id: orgId, purpose_code: 'marketing_email', purpose_version: emailVersion, source: 'self_toggle' }],
    });

  /** requireConsent on a request with the context the pipeline would give this caller. */
  async function gate(purpose: string, who: { token: string }, orgId: string) {
    const me = dataOf(await t.call('GET', '/v1/me', { token: who.token, org: orgId }));
    const request = {
      ctx: { principalId: me.id, isSuperadmin: false, orgId },
      inTx: <T>(fn: (tx: any) => Promise<T>) => t.db.withScope({ role: 'app_rls', principalId: me.id, orgId, permissions: [] }, fn),
    } as unknown as FastifyRequest;
    return requireConsent(purpose)(request);
  }

  before(async () => {
    t = await startTestApp();
    su = await t.superadmin();
    orgA = await t.createOrg({ name: 'Clinic A' });
    orgB = await t.createOrg({ name: 'Clinic B' });
    adminA = await t.addMember(orgA.id, uniqueEmail('admin-a'), 'admin');
    adminB = await t.addMember(orgB.id, uniqueEmail('admin-b'), 'admin');
    specialistA = await t.addMember(orgA.id, uniqueEmail('spec-a'), 'specialist');
    emailVersion = dataOf(
      await post('/v1/admin/consent-purposes/marketing_email/versions', su, { body_translations: { en: 'news' } }),
      201,
    ).version;
  });
  after(() => t.close());

  it('admins hold the gdpr.* codes (migration 0009); specialists do not', async () => {
    const admin = dataOf(await t.call('GET', '/v1/me', { token: adminA.token, org: orgA.id }));
    for (const code of ['gdpr.export_data', 'gdpr.erase_data', 'gdpr.restrict_processing'])
      assert.ok(admin.current_permissions.includes(code), code);
    const spec = dataOf(await t.call('GET', '/v1/me', { token: specialistA.token, org: orgA.id }));
    assert.ok(!spec.current_permissions.some((c: string) => c.startsWith('gdpr.')));
  });

  describe('restrictProcessing (POST /v1/gdpr/restrict)', () => {
    it('self: platform-wide restriction that feature gates honour (403 processing_restricted), idempotent, liftable, audited', async () => {
      const p = await t.addPatient(orgA.id, uniqueEmail('p'));
      dataOf(await grantEmail(p, orgA.id), 201);
      await gate('marketing_email', p, orgA.id);
      const r = dataOf(await post('/v1/gdpr/restrict', p.token, { reason: 'contesting accuracy' }));
      assert.equal(r.user_id, p.userId);
      assert.equal(r.organization_id, null);
      assert.equal(r.lifted_at, null);
      assert.equal(dataOf(await post('/v1/gdpr/restrict', p.token, {})).id, r.id, 'restricting twice keeps the active row');
      await assert.rejects(
        gate('marketing_email', p, orgA.id),
        (err: any) => err.statusCode === 403 && err.code === 'processing_restricted' && err.extra.missing_purpose === 'marketing_email',
      );
      const lifted = dataOf(await post('/v1/gdpr/restrict', p.token, { restricted: false }));
      assert.ok(lifted.lifted_at);
      assert.equal(lifted.lifted_by_principal_id, p.userId);
      await gate('marketing_email', p, orgA.id);
      assertError(await post('/v1/gdpr/restrict', p.token, { restricted: false }), 404, 'not_found');
      assert.deepEqual(
        (await audits('gdpr.processing_restricted', p.userId)).map((a) => [a.organization_id, a.actor_user_id]),
        [[null, p.userId]],
      );
      assert.equal((await audits('gdpr.restriction_lifted', p.userId)).length, 1);
    });

    it('clinic: gdpr.restrict_processing for its patient; applies at that clinic only; others 403/404', async () => {
      const p = await t.addPatient(orgA.id, uniqueEmail('p'));
      await t.db.query('insert into patients (organization_id, user_id) values ($1, $2)', [orgB.id, p.userId]);
      dataOf(await grantEmail(p, orgA.id), 201);
      dataOf(await grantEmail(p, orgB.id), 201);
      const pid = await patientRowId(orgA.id, p.userId);
      assertError(await post('/v1/gdpr/restrict', specialistA.token, { patient_id: pid }, orgA.id), 403, 'forbidden');
      assertError(await post('/v1/gdpr/restrict', adminB.token, { patient_id: pid }, orgA.id), 403, 'forbidden');
      assertError(await post('/v1/gdpr/restrict', adminB.token, { patient_id: pid }, orgB.id), 404, 'not_found');
      assertError(await post('/v1/gdpr/restrict', adminA.token, { user_id: p.userId }, orgA.id), 403, 'forbidden');
      assertError(await post('/v1/gdpr/restrict', p.token, { patient_id: pid }, orgA.id), 403, 'forbidden');
      const r = dataOf(await post('/v1/gdpr/restrict', adminA.token, { patient_id: pid, reason: 'objection' }, orgA.id));
      assert.equal(r.organization_id, orgA.id);
      assert.equal(r.restricted_by_principal_id, adminA.userId);
      await assert.rejects(gate('marketing_email', p, orgA.id), (err: any) => err.code === 'processing_restricted');
      await gate('marketing_email', p, orgB.id);
      // Row-level security: the person and the clinic's holders see it; the other clinic does not.
      const count = (scope: any) =>
        t.db.withScope(scope, async (tx) => (await tx.query('select 1 from gdpr_restrictions where id = $1', [r.id])).rows.length);
      assert.equal(await count({ role: 'app_rls', principalId: p.userId, orgId: NIL_UUID, permissions: [] }), 1);
      assert.equal(
        await count({ role: 'app_rls', principalId: adminB.userId, orgId: orgB.id, permissions: ['gdpr.restrict_processing'] }),
        0,
      );
      assert.equal(await count({ role: 'app_rls', principalId: specialistA.userId, orgId: orgA.id, permissions: [] }), 0);
      // The person cannot lift the clinic's restriction; the clinic can.
      assertError(await post('/v1/gdpr/restrict', p.token, { restricted: false }), 404, 'not_found');
      dataOf(await post('/v1/gdpr/restrict', adminA.token, { patient_id: pid, restricted: false }, orgA.id));
      await gate('marketing_email', p, orgA.id);
      // Superadmins may name any user: platform-wide.
      const s = dataOf(await post('/v1/gdpr/restrict', su, { user_id: p.userId }));
      assert.equal(s.organization_id, null);
      assertError(await post('/v1/gdpr/restrict', su, { user_id: MISSING_UUID }), 404, 'not_found');
    });
  });

  describe('eraseData (POST /v1/gdpr/erase)', () => {
    it('clinic erasure of a patient linked elsewhere: its part only (consents there, record there); the account stays', async () => {
      const p = await t.addPatient(orgA.id, uniqueEmail('p'));
      await t.db.query('insert into patients (organization_id, user_id) values ($1, $2)', [orgB.id, p.userId]);
      dataOf(await grantEmail(p, orgA.id), 201);
      dataOf(await grantEmail(p, orgB.id), 201);
      const pid = await patientRowId(orgA.id, p.userId);
      assertError(await post('/v1/gdpr/erase', specialistA.token, { patient_id: pid }, orgA.id), 403, 'forbidden');
      assertError(await post('/v1/gdpr/erase', adminB.token, { patient_id: pid }, orgB.id), 404, 'not_found');
      const r = dataOf(await post('/v1/gdpr/erase', adminA.token, { patient_id: pid }, orgA.id));
      assert.deepEqual(r, {
        user_id: p.userId,
        organization_id: orgA.id,
        anonymised: false,
        withdrawn_consents: 1,
        patient_records_deleted: 1,
        memberships_removed: 0,
      });
      const rows = (
        await t.db.query<any>(
          'select organization_id, withdrawn_at, withdrawal_reason, withdrawn_by_principal_id from consent_ledger where patient_profile_id = $1 order by organization_id',
          [p.userId],
        )
      ).rows;
      assert.equal(rows.find((x) => x.organization_id === orgA.id).withdrawal_reason, 'gdpr_erasure');
      assert.equal(rows.find((x) => x.organization_id === orgA.id).withdrawn_by_principal_id, adminA.userId);
      assert.equal(rows.find((x) => x.organization_id === orgB.id).withdrawn_at, null);
      const user = (await t.db.query<any>('select email, external_subject from users where id = $1', [p.userId])).rows[0];
      assert.ok(!user.email.startsWith('deleted-'));
      assert.deepEqual(dataOf(await t.call('GET', '/v1/me', { token: p.token })).patient_org_ids, [orgB.id]);
      const erased = await audits('gdpr.erased', p.userId);
      assert.deepEqual(
        erased.map((a) => [a.organization_id, a.actor_user_id, a.data.on_behalf]),
        [[orgA.id, adminA.userId, 'organization']],
      );
      assert.equal((await audits('user.erased', p.userId)).length, 0);
      // Soft-deleted rows still name the subject for erasure and export (a patient who left).
      dataOf(await post('/v1/gdpr/erase', adminA.token, { patient_id: pid }, orgA.id));
    });

    it('clinic erasure of a patient with no other link anonymises the account; self and superadmin erase everything', async () => {
      const lone = await t.addPatient(orgA.id, uniqueEmail('lone'));
      dataOf(await grantEmail(lone, orgA.id), 201);
      const r = dataOf(await post('/v1/gdpr/erase', adminA.token, { patient_id: await patientRowId(orgA.id, lone.userId) }, orgA.id));
      assert.equal(r.anonymised, true);
      assert.equal(
        (await t.db.query<any>('select email from users where id = $1', [lone.userId])).rows[0].email,
        `deleted-${lone.userId}@invalid`,
      );
      assert.equal((await audits('user.erased', lone.userId)).length, 1);
      assert.equal(
        (await t.db.query('select 1 from consent_ledger where patient_profile_id = $1', [lone.userId])).rows.length,
        1,
        'the ledger row stays',
      );

      const self = await t.addPatient(orgB.id, uniqueEmail('self'));
      const s = dataOf(await post('/v1/gdpr/erase', self.token, {}));
      assert.equal(s.anonymised, true);
      assert.equal(s.organization_id, null);

      const other = await t.addPatient(orgB.id, uniqueEmail('other'));
      assertError(await post('/v1/gdpr/erase', adminB.token, { user_id: other.userId }, orgB.id), 403, 'forbidden');
      const byOperator = dataOf(await post('/v1/gdpr/erase', su, { user_id: other.userId }));
      assert.equal(byOperator.anonymised, true);
      assert.deepEqual(
        (await audits('gdpr.erased', other.userId)).map((a) => a.data.on_behalf),
        ['platform'],
      );
      // The last admin of an organization is refused, as for DELETE /v1/me.
      assertError(await post('/v1/gdpr/erase', su, { user_id: adminB.userId }), 409, 'last_admin');
    });
  });

  describe('exportData, getExport, downloadExport', () => {
    async function waitDone(token: string, id: string, org?: string) {
      const seen: number[] = [];
      for (let i = 0; i < 200; i++) {
        const job = dataOf(await t.call('GET', `/v1/gdpr/exports/${id}`, { token, ...(org ? { org } : {}) }));
        seen.push(job.progress);
        if (job.status === 'done' || job.status === 'failed') return { job, seen };
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error('export did not finish');
    }

    it('self: 202 queued job, progress to 100, a JSON archive of everything about the subject, download audited', async () => {
      const p = await t.addPatient(orgA.id, uniqueEmail('exporter'));
      await t.db.query('insert into patients (organization_id, user_id) values ($1, $2)', [orgB.id, p.userId]);
      dataOf(await grantEmail(p, orgA.id), 201);
      dataOf(await grantEmail(p, orgB.id), 201);
      dataOf(await post('/v1/gdpr/restrict', p.token, {}));
      const queued = dataOf(await post('/v1/gdpr/export', p.token, {}), 202);
      assert.ok(['queued', 'running', 'done'].includes(queued.status));
      assert.equal(queued.subject_user_id, p.userId);
      assert.equal(queued.organization_id, null);
      const { job, seen } = await waitDone(p.token, queued.id);
      assert.equal(job.status, 'done', JSON.stringify(job));
      assert.equal(job.progress, 100);
      assert.ok(
        seen.every((v, i) => i === 0 || v >= seen[i - 1]!),
        'progress never goes back',
      );
      assert.equal(job.download_url, `/v1/gdpr/exports/${job.id}/download`);
      const res = await t.call('GET', job.download_url, { token: p.token });
      assert.equal(res.statusCode, 200, res.body);
      assert.match(String(res.headers['content-type']), /application\/json/);
      assert.match(String(res.headers['content-disposition']), new RegExp(`attachment; filename="gdpr-export-${job.id}.json"`));
      assert.equal(res.rawPayload.length, job.file.bytes);
      const archive = JSON.parse(res.body);
      assert.equal(archive.format, 'clinic-platform.gdpr-export');
      assert.equal(archive.scope, 'platform');
      assert.equal(archive.user.id, p.userId);
      assert.deepEqual(archive.patient_records.map((r: any) => r.organization_id).sort(), [orgA.id, orgB.id].sort());
      assert.equal(archive.consent_ledger.length, 2);
      assert.equal(archive.processing_restrictions.length, 1);
      assert.ok(archive.audit_entries.some((a: any) => a.action === 'consent_changed'));
      assert.ok(archive.audit_entries.some((a: any) => a.action === 'gdpr.export_requested'));
      assert.equal((await audits('gdpr.export_downloaded', p.userId)).length, 1);
      // Nobody else sees the job: 404.
      for (const token of [adminA.token, specialistA.token, adminB.token]) {
        assertError(await t.call('GET', `/v1/gdpr/exports/${job.id}`, { token, org: orgA.id }), 404, 'not_found');
        assertError(await t.call('GET', job.download_url, { token, org: orgA.id }), 404, 'not_found');
      }
      dataOf(await t.call('GET', `/v1/gdpr/exports/${job.id}`, { token: su }));
      assertError(await t.call('GET', `/v1/gdpr/exports/${MISSING_UUID}`, { token: p.token }), 404, 'not_found');
    });

    it("clinic: gdpr.export_data for its patient; the archive holds that clinic's part only; the clinic's holders can poll it", async () => {
      const p = await t.addPatient(orgA.id, uniqueEmail('exported'));
      await t.db.query('insert into patients (organization_id, user_id) values ($1, $2)', [orgB.id, p.userId]);
      dataOf(await grantEmail(p, orgA.id), 201);
      dataOf(await grantEmail(p, orgB.id), 201);
      const pid = await patientRowId(orgA.id, p.userId);
      assertError(await post('/v1/gdpr/export', specialistA.token, { patient_id: pid }, orgA.id), 403, 'forbidden');
      assertError(await post('/v1/gdpr/export', adminB.token, { patient_id: pid }, orgB.id), 404, 'not_found');
      const queued = dataOf(await post('/v1/gdpr/export', adminA.token, { patient_id: pid }, orgA.id), 202);
      assert.equal(queued.organization_id, orgA.id);
      const second = await t.addMember(orgA.id, uniqueEmail('admin2'), 'admin');
      const { job } = await waitDone(second.token, queued.id, orgA.id);
      assert.equal(job.status, 'done');
      assertError(await t.call('GET', `/v1/gdpr/exports/${job.id}`, { token: p.token }), 404, 'not_found');
      const archive = JSON.parse((await t.call('GET', job.download_url, { token: adminA.token, org: orgA.id })).body);
      assert.deepEqual(archive.scope, { organization_id: orgA.id });
      assert.deepEqual(
        archive.patient_records.map((r: any) => r.organization_id),
        [orgA.id],
      );
      assert.deepEqual(
        archive.consent_ledger.map((r: any) => r.organization_id),
        [orgA.id],
      );
      assert.ok(archive.audit_entries.every((a: any) => a.organization_id === orgA.id));
      assert.deepEqual(archive.platform_roles, []);
    });

    it('download before the job is done: 409 export_not_ready; the job row is durable (queued rows survive a restart)', async () => {
      const p = await t.addPatient(orgA.id, uniqueEmail('early'));
      // Enqueue directly as the person would, with no runner kick: then read it before the runner does.
      const job = await t.db.withScope(
        { role: 'app_rls', principalId: p.userId, orgId: NIL_UUID, permissions: [] },
        async (tx) =>
          (
            await tx.query<any>(`insert into jobs (kind, requested_by_principal_id, payload) values ('gdpr_export', $1, $2) returning id`, [
              p.userId,
              JSON.stringify({ subject_user_id: p.userId, organization_id: null }),
            ])
          ).rows[0],
      );
      await t.db.query(`update jobs set status = 'running', progress = 40 where id = $1`, [job.id]);
      const err = assertError(await t.call('GET', `/v1/gdpr/exports/${job.id}/download`, { token: p.token }), 409, 'export_not_ready');
      assert.match(err.message, /40%/);
      // Application roles cannot move a job on or forge a finished one.
      await assert.rejects(
        t.db.withScope({ role: 'app_rls', principalId: p.userId, orgId: NIL_UUID, permissions: [] }, (tx) =>
          tx.query(`update jobs set status = 'done' where id = $1`, [job.id]),
        ),
        /permission denied/,
      );
      await assert.rejects(
        t.db.withScope({ role: 'app_rls', principalId: p.userId, orgId: NIL_UUID, permissions: [] }, (tx) =>
          tx.query(`insert into jobs (kind, requested_by_principal_id, status, payload) values ('gdpr_export', $1, 'done', '{}')`, [
            p.userId,
          ]),
        ),
        /row-level security/,
      );
    });
  });
});
