import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ORPHAN_GRACE_MS, sweepOrphanFormFiles } from '../src/modules/forms/jobs.ts';
import { assertError, dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

// GDPR erasure and export of patient records, custom values and forms (migration 0027, docs/decisions.md "GDPR
// erasure of records and forms"): patient records, custom field values, specialist profiles, forms,
// their values and files. Signed forms are retained clinical records; everything else is emptied.

const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5f1d2b80000000049454e44ae426082',
  'hex',
);

function multipart(name: string, bytes: Buffer) {
  const boundary = `----gdpr${Date.now()}`;
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: image/png\r\n\r\n`;
  return {
    payload: Buffer.concat([Buffer.from(head), bytes, Buffer.from(`\r\n--${boundary}--\r\n`)]),
    contentType: `multipart/form-data; boundary=${boundary}`,
  };
}

interface Seeded {
  person: { token: string; userId: string };
  patientId: string;
  pending: string;
  deletedPending: string;
  signed: string | null;
  pendingFileKey: string;
  signedFileKey: string | null;
}

describe('gdpr: records, custom values, forms and files', () => {
  let t: TestApp;
  let su: string;
  let orgA: string;
  let orgB: string;
  let adminA: { token: string; userId: string };
  let adminB: { token: string; userId: string };
  let specialistA: string;
  let template: { id: string };

  const call = (method: string, url: string, token: string, org: string, body?: unknown) =>
    t.call(method, url, { token, org, ...(body !== undefined ? { body } : {}) });
  const upload = async (formId: string, token: string, org: string, name: string) => {
    const m = multipart(name, PNG);
    const res = await t.app.inject({
      method: 'POST',
      url: `/v1/forms/${formId}/files`,
      payload: m.payload,
      headers: { authorization: `Bearer ${token}`, 'x-organization-id': org, 'content-type': m.contentType },
    });
    const file = dataOf(res, 201);
    return (await t.db.query<{ asset_key: string }>('select asset_key from form_files where id = $1', [file.id])).rows[0]!.asset_key;
  };
  const patientRow = async (id: string) =>
    (
      await t.db.query<any>(
        `select first_name, last_name, to_char(date_of_birth, 'YYYY-MM-DD') as dob, phone, notes, custom_field_values, deleted_at from patients where id = $1`,
        [id],
      )
    ).rows[0];
  const formRow = async (id: string) =>
    (await t.db.query<any>('select status, "values", deleted_at from forms where id = $1', [id])).rows[0];
  const fileRows = async (formId: string) => (await t.db.query<any>('select asset_key from form_files where form_id = $1', [formId])).rows;
  const lastAudit = async (action: string, entityId: string) =>
    (
      await t.db.query<any>('select data from audit_logs where action = $1 and entity_id = $2 order by created_at desc, id desc limit 1', [
        action,
        entityId,
      ])
    ).rows[0]?.data;

  /** A patient of orgA with a full record, a filled pending form with a file, a soft-deleted filled form and (optionally) a signed form with a file. */
  async function seed(label: string, withSigned: boolean): Promise<Seeded> {
    const person = await t.addPatient(orgA, uniqueEmail(label));
    const patientId = (
      await t.db.query<{ id: string }>('select id from patients where organization_id = $1 and user_id = $2', [orgA, person.userId])
    ).rows[0]!.id;
    dataOf(
      await call('PUT', `/v1/patients/${patientId}`, adminA.token, orgA, {
        first_name: 'Ana',
        last_name: label,
        date_of_birth: '1990-05-01',
        phone: '+40 700 000 000',
        notes: 'anxious about needles',
        custom_fields: { allergies: 'penicillin', risk: 'high' },
      }),
    );
    const newForm = async () =>
      dataOf(await call('POST', '/v1/forms', specialistA, orgA, { form_template_id: template.id, patient_id: patientId }), 201)
        .id as string;
    const pending = await newForm();
    dataOf(await call('PATCH', `/v1/forms/${pending}`, person.token, orgA, { values: { pain: 4 } }));
    dataOf(await call('PATCH', `/v1/forms/${pending}`, specialistA, orgA, { values: { pain: 4, assessment: 'private note' } }));
    const pendingFileKey = await upload(pending, person.token, orgA, `${label}-pending.png`);
    const deletedPending = await newForm();
    dataOf(await call('PATCH', `/v1/forms/${deletedPending}`, specialistA, orgA, { values: { pain: 2 } }));
    dataOf(await call('DELETE', `/v1/forms/${deletedPending}`, adminA.token, orgA), 204);
    let signed: string | null = null;
    let signedFileKey: string | null = null;
    if (withSigned) {
      signed = await newForm();
      dataOf(await call('PATCH', `/v1/forms/${signed}`, specialistA, orgA, { values: { pain: 7, assessment: 'signed note' } }));
      signedFileKey = await upload(signed, specialistA, orgA, `${label}-consent.png`);
      dataOf(await call('POST', `/v1/forms/${signed}/sign`, person.token, orgA));
    }
    return { person, patientId, pending, deletedPending, signed, pendingFileKey, signedFileKey };
  }

  /** What must be gone from an erased pending form (live or soft-deleted) and its file. */
  async function assertPendingErased(s: Seeded) {
    for (const id of [s.pending, s.deletedPending]) {
      const f = await formRow(id);
      assert.deepEqual(f.values, {}, `form ${id} values emptied`);
      assert.ok(f.deleted_at, `form ${id} soft-deleted`);
      assert.equal(f.status, 'pending');
    }
    assert.deepEqual(await fileRows(s.pending), []);
  }

  async function waitExport(token: string, org: string | undefined, body: unknown) {
    const queued = dataOf(await t.call('POST', '/v1/gdpr/export', { token, body, ...(org ? { org } : {}) }), 202);
    for (let i = 0; i < 300; i++) {
      const job = dataOf(await t.call('GET', `/v1/gdpr/exports/${queued.id}`, { token, ...(org ? { org } : {}) }));
      if (job.status === 'done') return JSON.parse((await t.call('GET', job.download_url, { token, ...(org ? { org } : {}) })).body);
      assert.notEqual(job.status, 'failed', JSON.stringify(job));
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error('export did not finish');
  }

  before(async () => {
    t = await startTestApp();
    su = await t.superadmin();
    orgA = (await t.createOrg({ name: 'Clinic A' })).id;
    orgB = (await t.createOrg({ name: 'Clinic B' })).id;
    adminA = await t.addMember(orgA, uniqueEmail('admin-a'), 'admin');
    adminB = await t.addMember(orgB, uniqueEmail('admin-b'), 'admin');
    specialistA = (await t.addMember(orgA, uniqueEmail('spec-a'), 'specialist')).token;
    const cf = async (org: string, token: string, body: Record<string, unknown>) =>
      dataOf(await call('POST', '/v1/custom-fields', token, org, { label: body.key, field_type: 'text', ...body }), 201);
    await cf(orgA, adminA.token, { entity_type: 'patient', key: 'allergies' });
    await cf(orgA, adminA.token, { entity_type: 'patient', key: 'risk', private: true });
    await cf(orgB, adminB.token, { entity_type: 'specialist', key: 'license_no' });
    const pain = await cf(orgA, adminA.token, { entity_type: 'form', key: 'pain', field_type: 'number' });
    const assessment = await cf(orgA, adminA.token, { entity_type: 'form', key: 'assessment', private: true });
    template = dataOf(
      await call('POST', '/v1/form-templates', adminA.token, orgA, {
        name: 'Intake',
        fields: [{ custom_field_id: pain.id, required: true }, { custom_field_id: assessment.id }],
      }),
      201,
    );
  });
  after(() => t.close());

  it('clinic erasure: the record and unsigned forms are emptied, files removed after commit; the signed form and its file are retained with the name it needs', async () => {
    const s = await seed('clinic', true);
    // Also a patient of clinic B: the clinic erases its part only, the account stays.
    await t.db.query(`insert into patients (organization_id, user_id, first_name, phone) values ($1, $2, 'Ana', '+40 1')`, [
      orgB,
      s.person.userId,
    ]);
    const r = dataOf(await call('POST', '/v1/gdpr/erase', adminA.token, orgA, { patient_id: s.patientId }));
    assert.deepEqual(r, {
      user_id: s.person.userId,
      organization_id: orgA,
      anonymised: false,
      withdrawn_consents: 0,
      patient_records_deleted: 1,
      memberships_removed: 0,
    });

    const rec = await patientRow(s.patientId);
    assert.deepEqual([rec.first_name, rec.last_name, rec.dob], ['Ana', 'clinic', '1990-05-01'], 'identity of the retained clinical record');
    assert.deepEqual([rec.phone, rec.notes, rec.custom_field_values], [null, null, {}]);
    assert.ok(rec.deleted_at);
    await assertPendingErased(s);
    assert.equal(await t.rt.assets.head(s.pendingFileKey), null, 'the object went right after commit');

    const signed = await formRow(s.signed!);
    assert.deepEqual([signed.status, signed.values, signed.deleted_at], ['signed', { pain: 7, assessment: 'signed note' }, null]);
    assert.deepEqual(
      (await fileRows(s.signed!)).map((f) => f.asset_key),
      [s.signedFileKey],
    );
    assert.ok(await t.rt.assets.head(s.signedFileKey!));
    // The clinic still reads its retained record through the API.
    assert.equal(dataOf(await call('GET', `/v1/forms/${s.signed}`, adminA.token, orgA)).status, 'signed');

    const other = (
      await t.db.query<any>('select first_name, phone, deleted_at from patients where organization_id = $1 and user_id = $2', [
        orgB,
        s.person.userId,
      ])
    ).rows[0];
    assert.deepEqual(
      other,
      { first_name: 'Ana', phone: '+40 1', deleted_at: null },
      "another clinic's record is not this clinic's to erase",
    );

    const audit = await lastAudit('gdpr.erased', s.person.userId);
    assert.equal(audit.forms_erased, 2);
    assert.equal(audit.form_files_removed, 1);
    assert.equal(audit.patient_records_cleared, 1);
    assert.deepEqual(audit.signed_forms_retained, [s.signed]);
    assert.ok(!JSON.stringify(audit).includes(s.pendingFileKey), 'asset keys stay out of the audit trail');

    // Erasing again finds nothing more to erase and keeps the retained form.
    dataOf(await call('POST', '/v1/gdpr/erase', adminA.token, orgA, { patient_id: s.patientId }));
    assert.equal((await lastAudit('gdpr.erased', s.person.userId)).forms_erased, 0);
    assert.equal((await formRow(s.signed!)).status, 'signed');
  });

  it('account erasure (self): every record emptied, name gone where no signed form needs it, specialist profile removed', async () => {
    const s = await seed('self', false);
    // The same person is a specialist at clinic B with a profile and custom values.
    await t.db.query(
      `insert into memberships (user_id, organization_id, role_id) select $1, $2, r.id from roles r where r.organization_id = $2 and r.code = 'specialist'`,
      [s.person.userId, orgB],
    );
    const profile = dataOf(
      await call('POST', '/v1/specialists', adminB.token, orgB, {
        user_id: s.person.userId,
        display_name: 'Dr Ana',
        contact_email: 'ana@example.test',
        custom_fields: { license_no: 'RO-123' },
      }),
      201,
    );
    const r = dataOf(await t.call('POST', '/v1/gdpr/erase', { token: s.person.token, body: {} }));
    assert.equal(r.anonymised, true);
    assert.equal(r.memberships_removed, 1);

    const rec = await patientRow(s.patientId);
    assert.deepEqual(
      [rec.first_name, rec.last_name, rec.dob, rec.phone, rec.notes, rec.custom_field_values],
      [null, null, null, null, null, {}],
    );
    await assertPendingErased(s);
    assert.equal(await t.rt.assets.head(s.pendingFileKey), null);
    assert.equal((await t.db.query('select 1 from specialists where id = $1', [profile.id])).rows.length, 0);
    const audit = await lastAudit('gdpr.erased', s.person.userId);
    assert.equal(audit.specialist_profiles_removed, 1);
    assert.deepEqual(audit.signed_forms_retained, []);
  });

  it('account deletion (DELETE /v1/me): signed form retained; the objects of the emptied file rows are deleted after commit', async () => {
    const s = await seed('deleteme', true);
    assert.equal((await call('DELETE', '/v1/me', s.person.token, orgA)).statusCode, 204);
    const rec = await patientRow(s.patientId);
    assert.deepEqual([rec.first_name, rec.dob, rec.phone, rec.notes, rec.custom_field_values], ['Ana', '1990-05-01', null, null, {}]);
    await assertPendingErased(s);
    assert.equal((await formRow(s.signed!)).status, 'signed');
    // The pending file's object goes right after the commit (as for POST /v1/gdpr/erase); the
    // retained signed form's file stays, also through the orphan sweep.
    assert.equal(await t.rt.assets.head(s.pendingFileKey), null);
    const deps = { db: t.db, assets: t.rt.assets, logger: t.rt.logger };
    const swept = await sweepOrphanFormFiles(deps, Date.now() + 2 * ORPHAN_GRACE_MS);
    assert.ok(!swept.includes(s.signedFileKey!));
    assert.ok(await t.rt.assets.head(s.signedFileKey!));
  });

  it('export: the clinic receives everything it holds; the person its own copy without staff notes, private fields or staff ids', async () => {
    const s = await seed('export', true);
    const clinic = await waitExport(adminA.token, orgA, { patient_id: s.patientId });
    const rec = clinic.patient_records[0];
    assert.deepEqual(
      [rec.first_name, rec.last_name, rec.date_of_birth, rec.phone, rec.notes],
      ['Ana', 'export', '1990-05-01', '+40700000000', 'anxious about needles'],
    );
    assert.deepEqual(clinic.custom_field_values.map((v: any) => [v.record_type, v.key, v.value, v.private]).sort(), [
      ['patient', 'allergies', 'penicillin', false],
      ['patient', 'risk', 'high', true],
    ]);
    const byId = (archive: any, id: string) => archive.forms.find((f: any) => f.id === id);
    assert.equal(clinic.forms.length, 3, 'pending, soft-deleted and signed forms');
    assert.deepEqual(byId(clinic, s.signed!).values, { pain: 7, assessment: 'signed note' });
    assert.deepEqual(
      byId(clinic, s.signed!).fields.map((f: any) => f.key),
      ['pain', 'assessment'],
    );
    assert.ok(byId(clinic, s.signed!).signed_by_principal_id);
    assert.ok(byId(clinic, s.deletedPending).deleted_at);
    assert.deepEqual(
      clinic.form_files.map((f: any) => [f.form_id, f.filename, f.content_type, f.size_bytes]).sort(),
      [
        [s.pending, 'export-pending.png', 'image/png', PNG.length],
        [s.signed, 'export-consent.png', 'image/png', PNG.length],
      ].sort(),
    );

    const own = await waitExport(s.person.token, undefined, {});
    assert.equal(own.patient_records[0].phone, '+40700000000');
    assert.ok(!('notes' in own.patient_records[0]), "staff notes are not in the person's copy");
    assert.deepEqual(
      own.custom_field_values.map((v: any) => v.key),
      ['allergies'],
    );
    assert.deepEqual(byId(own, s.signed!).values, { pain: 7 });
    assert.deepEqual(
      byId(own, s.signed!).fields.map((f: any) => f.key),
      ['pain'],
    );
    assert.ok(!('signed_by_principal_id' in byId(own, s.signed!)) && !('created_by_principal_id' in byId(own, s.signed!)));
    assert.equal(own.form_files.length, 2);
    assert.ok(!JSON.stringify(own).includes('private note') && !JSON.stringify(own).includes('signed note'));

    // A specialist profile appears in its own section, with its custom values.
    const staff = await t.addMember(orgB, uniqueEmail('spec-b'), 'specialist');
    dataOf(
      await call('POST', '/v1/specialists', adminB.token, orgB, {
        user_id: staff.userId,
        display_name: 'Dr B',
        contact_phone: '+40 212 345 678',
        custom_fields: { license_no: 'RO-9' },
      }),
      201,
    );
    const staffOwn = await waitExport(staff.token, undefined, {});
    assert.deepEqual(
      staffOwn.specialist_profiles.map((p: any) => [p.display_name, p.contact_phone]),
      [['Dr B', '+40212345678']],
    );
    assert.deepEqual(
      staffOwn.custom_field_values.map((v: any) => [v.record_type, v.key, v.value]),
      [['specialist', 'license_no', 'RO-9']],
    );

    // After a clinic erasure the export shows what was kept and nothing that was erased.
    dataOf(await call('POST', '/v1/gdpr/erase', adminA.token, orgA, { patient_id: s.patientId }));
    const afterErase = await waitExport(adminA.token, orgA, { patient_id: s.patientId });
    assert.deepEqual(afterErase.custom_field_values, []);
    assert.equal(afterErase.patient_records[0].phone, null);
    assert.deepEqual(
      afterErase.forms.filter((f: any) => Object.keys(f.values).length).map((f: any) => f.id),
      [s.signed],
    );
    assert.deepEqual(
      afterErase.form_files.map((f: any) => f.form_id),
      [s.signed],
    );
  });

  it('only the owner may empty a deleted form: crafted SQL as the application roles is refused, and the erasure helper is not callable', async () => {
    const s = await seed('guard', false);
    const scope = {
      principalId: adminA.userId,
      orgId: orgA,
      permissions: ['forms.fill_org', 'forms.delete_unsigned', 'forms.view_org', 'data.view_deleted'],
    };
    for (const role of ['app_rls', 'app_bypass'] as const) {
      await assert.rejects(
        t.db.withScope({ ...scope, role }, (tx) => tx.query(`update forms set "values" = '{}'::jsonb where id = $1`, [s.deletedPending])),
        /deleted/,
        role,
      );
      await assert.rejects(
        t.db.withScope({ ...scope, role }, (tx) => tx.query('select app.erase_patient_records($1, $2)', [s.person.userId, orgA])),
        /permission denied/,
        role,
      );
    }
    assert.deepEqual((await formRow(s.deletedPending)).values, { pain: 2 });
    // Erasure by another clinic's admin reaches nothing here (404), as for the rest of erasure.
    assertError(await call('POST', '/v1/gdpr/erase', adminB.token, orgB, { patient_id: s.patientId }), 404, 'not_found');
    assert.equal((await patientRow(s.patientId)).phone, '+40700000000');
    // A superadmin erasing the whole account reaches the record too.
    dataOf(await t.call('POST', '/v1/gdpr/erase', { token: su, body: { user_id: s.person.userId } }));
    assert.equal((await patientRow(s.patientId)).phone, null);
    await assertPendingErased(s);
  });
});
