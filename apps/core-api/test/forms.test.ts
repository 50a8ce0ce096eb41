import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, MISSING_UUID, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';
import { ORPHAN_GRACE_MS, sweepOrphanFormFiles } from '../src/modules/forms/jobs.ts';

// Form templates (spec 9.6) and forms (spec 2.10, 3.5, 5.8, 7): snapshots, fill, sign, files.

const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5f1d2b80000000049454e44ae426082',
  'hex',
);

function multipart(file: { name: string; type: string; bytes: Buffer }, field = 'file') {
  const boundary = `----clinic${Date.now()}`;
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${file.name}"\r\nContent-Type: ${file.type}\r\n\r\n`;
  return {
    payload: Buffer.concat([Buffer.from(head), file.bytes, Buffer.from(`\r\n--${boundary}--\r\n`)]),
    contentType: `multipart/form-data; boundary=${boundary}`,
  };
}

describe('form templates and forms', () => {
  let t: TestApp;
  let org: string;
  let otherOrg: string;
  let admin: string;
  let otherAdmin: string;
  let specialist: string;
  let support: string;
  let patient: { token: string; userId: string };
  let otherPatient: { token: string; userId: string };
  let patientId: string;
  let otherPatientId: string;
  let fields: Record<string, any>;
  let template: any;

  const call = (method: string, url: string, token: string, body?: unknown, o = org) =>
    t.call(method, url, { token, org: o, ...(body !== undefined ? { body } : {}) });
  const upload = (formId: string, token: string, file: { name: string; type: string; bytes: Buffer }) => {
    const m = multipart(file);
    return t.app.inject({
      method: 'POST',
      url: `/v1/forms/${formId}/files`,
      payload: m.payload,
      headers: { authorization: `Bearer ${token}`, 'x-organization-id': org, 'content-type': m.contentType },
    });
  };
  const field = async (key: string, body: Record<string, unknown>) =>
    dataOf(await call('POST', '/v1/custom-fields', admin, { entity_type: 'form', key, label: key, field_type: 'text', ...body }), 201);
  const newForm = async (token = specialist, pid = patientId) =>
    dataOf(await call('POST', '/v1/forms', token, { form_template_id: template.id, patient_id: pid }), 201);

  before(async () => {
    t = await startTestApp({ env: { FORM_FILE_MAX_BYTES: '4096' } });
    org = (await t.createOrg()).id;
    otherOrg = (await t.createOrg()).id;
    admin = (await t.addMember(org, uniqueEmail('admin'), 'admin')).token;
    otherAdmin = (await t.addMember(otherOrg, uniqueEmail('other-admin'), 'admin')).token;
    specialist = (await t.addMember(org, uniqueEmail('spec'), 'specialist')).token;
    support = (await t.addMember(org, uniqueEmail('support'), 'customer_support')).token;
    patient = await t.addPatient(org, uniqueEmail('patient'));
    otherPatient = await t.addPatient(org, uniqueEmail('patient2'));
    const ids = await t.db.query<{ id: string; user_id: string }>('select id, user_id from patients where organization_id = $1', [org]);
    patientId = ids.rows.find((r) => r.user_id === patient.userId)!.id;
    otherPatientId = ids.rows.find((r) => r.user_id === otherPatient.userId)!.id;
    fields = {
      pain: await field('pain', { field_type: 'number', label: 'Pain (0-10)' }),
      side: await field('side', { field_type: 'select', options: ['left', 'right'] }),
      symptoms: await field('symptoms', { field_type: 'multi_select', options: ['a', 'b', 'c'] }),
      since: await field('since', { field_type: 'date' }),
      smoker: await field('smoker', { field_type: 'boolean' }),
      story: await field('story', { field_type: 'long_text' }),
      assessment: await field('assessment', { private: true, label: 'Clinician assessment' }),
    };
    template = dataOf(
      await call('POST', '/v1/form-templates', admin, {
        name: 'Intake',
        fields: [
          { custom_field_id: fields.pain.id, required: true },
          { custom_field_id: fields.side.id },
          { custom_field_id: fields.symptoms.id },
          { custom_field_id: fields.since.id },
          { custom_field_id: fields.smoker.id },
          { custom_field_id: fields.story.id },
          { custom_field_id: fields.assessment.id },
        ],
      }),
      201,
    );
  });
  after(() => t.close());

  describe('templates', () => {
    it('have the lifecycle of 3.1: published v1, draft in place, publish v2, rollback draft, versions newest first', async () => {
      const tpl = dataOf(
        await call('POST', '/v1/form-templates', admin, { name: 'Short', fields: [{ custom_field_id: fields.pain.id }] }),
        201,
      );
      assert.deepEqual([tpl.version, tpl.published], [1, true]);
      const draft = dataOf(
        await call('PATCH', `/v1/form-templates/${tpl.id}`, admin, {
          name: 'Short v2',
          fields: [{ custom_field_id: fields.pain.id }, { custom_field_id: fields.side.id, required: true }],
        }),
      );
      assert.deepEqual([draft.version, draft.published, draft.name], [1, false, 'Short v2']);
      // New forms still come from version 1.
      const f1 = dataOf(await call('POST', '/v1/forms', specialist, { form_template_id: tpl.id, patient_id: patientId }), 201);
      assert.deepEqual([f1.template_version, f1.title, f1.fields.length], [1, 'Short', 1]);
      const p2 = dataOf(await call('POST', `/v1/form-templates/${tpl.id}/publish`, admin));
      assert.deepEqual([p2.version, p2.published], [2, true]);
      assertError(await call('POST', `/v1/form-templates/${tpl.id}/publish`, admin), 409, 'already_published');
      const f2 = dataOf(await call('POST', '/v1/forms', specialist, { form_template_id: tpl.id, patient_id: patientId }), 201);
      assert.deepEqual([f2.template_version, f2.title, f2.fields.map((x: any) => x.key)], [2, 'Short v2', ['pain', 'side']]);
      const rb = dataOf(await call('POST', `/v1/form-templates/${tpl.id}/rollback`, admin, { version: 1 }));
      assert.deepEqual([rb.version, rb.published, rb.name], [2, false, 'Short']);
      assert.equal(dataOf(await call('POST', `/v1/form-templates/${tpl.id}/publish`, admin)).version, 3);
      const versions = dataOf(await call('GET', `/v1/form-templates/${tpl.id}/versions`, specialist));
      assert.deepEqual(
        versions.map((v: any) => [v.version, v.template.name]),
        [
          [3, 'Short'],
          [2, 'Short v2'],
          [1, 'Short'],
        ],
      );
      assert.equal(dataOf(await call('GET', `/v1/form-templates/${tpl.id}/versions/2`, specialist)).template.fields.length, 2);
      assertError(await call('GET', `/v1/form-templates/${tpl.id}/versions/5`, specialist), 404, 'not_found');
      assertError(await call('POST', `/v1/form-templates/${tpl.id}/rollback`, admin, { version: 5 }), 404, 'not_found');
      assert.ok(dataOf(await call('GET', '/v1/form-templates', specialist)).some((x: any) => x.id === tpl.id));
      dataOf(await call('DELETE', `/v1/form-templates/${tpl.id}`, admin), 204);
      assertError(await call('GET', `/v1/form-templates/${tpl.id}`, admin), 404, 'not_found');
      // Forms made from it survive.
      assert.equal(dataOf(await call('GET', `/v1/forms/${f2.id}`, specialist)).title, 'Short v2');
      const err = assertError(
        await call('POST', '/v1/forms', specialist, { form_template_id: tpl.id, patient_id: patientId }),
        400,
        'validation_error',
      );
      assert.ok(err.fields.form_template_id);
    });

    it('accept only live form fields of the organization, each once; gated by form_templates.view / .manage', async () => {
      const patientField = dataOf(
        await call('POST', '/v1/custom-fields', admin, { entity_type: 'patient', key: 'tpl_x', label: 'x', field_type: 'text' }),
        201,
      );
      for (const fieldsBody of [
        [{ custom_field_id: patientField.id }],
        [{ custom_field_id: MISSING_UUID }],
        [{ custom_field_id: fields.pain.id }, { custom_field_id: fields.pain.id }],
        [],
      ]) {
        assertError(await call('POST', '/v1/form-templates', admin, { name: 'Bad', fields: fieldsBody }), 400, 'validation_error');
      }
      assertError(
        await call('POST', '/v1/form-templates', specialist, { name: 'x', fields: [{ custom_field_id: fields.pain.id }] }),
        403,
        'forbidden',
      );
      assertError(await call('PATCH', `/v1/form-templates/${template.id}`, support, { name: 'x' }), 403, 'forbidden');
      assertError(await call('GET', '/v1/form-templates', patient.token), 403, 'forbidden');
      assert.ok(dataOf(await call('GET', `/v1/form-templates/${template.id}`, support)));
      assertError(await call('GET', `/v1/form-templates/${template.id}`, otherAdmin, undefined, otherOrg), 404, 'not_found');
    });
  });

  describe('forms', () => {
    it('are created from the latest published template version, each field snapshotted at its latest published version', async () => {
      // A draft of a field is not used.
      await call('PATCH', `/v1/custom-fields/${fields.story.id}`, admin, { label: 'Draft label' });
      const form = await newForm();
      assert.equal(form.status, 'pending');
      assert.equal(form.template_version, 1);
      const story = form.fields.find((f: any) => f.key === 'story');
      assert.deepEqual(story, {
        custom_field_id: fields.story.id,
        version: 1,
        key: 'story',
        label: 'story',
        field_type: 'long_text',
        options: [],
        required: false,
        private: false,
      });
      assert.deepEqual(form.fields.find((f: any) => f.key === 'side').options, ['left', 'right']);
      const ev = await t.db.query(`select type from domain_events where data->>'id' = $1`, [form.id]);
      assert.deepEqual(
        ev.rows.map((r: any) => r.type),
        ['form.created'],
      );
    });

    it('snapshots stay as they were after the field is edited, published and deleted, and are append-only in the database', async () => {
      const f = await field(`temp_${Date.now()}`, { field_type: 'select', options: ['x', 'y'] });
      const tpl = dataOf(await call('POST', '/v1/form-templates', admin, { name: 'Temp', fields: [{ custom_field_id: f.id }] }), 201);
      const form = dataOf(await call('POST', '/v1/forms', specialist, { form_template_id: tpl.id, patient_id: patientId }), 201);
      await call('PATCH', `/v1/custom-fields/${f.id}`, admin, { label: 'Changed', options: ['z'] });
      await call('POST', `/v1/custom-fields/${f.id}/publish`, admin);
      dataOf(await call('DELETE', `/v1/custom-fields/${f.id}`, admin), 204);
      const again = dataOf(await call('GET', `/v1/forms/${form.id}`, specialist));
      assert.deepEqual(again.fields, form.fields);
      // Values are still checked against the snapshot, not the live field.
      dataOf(await call('PATCH', `/v1/forms/${form.id}`, specialist, { values: { [f.key]: 'x' } }));
      assertError(await call('PATCH', `/v1/forms/${form.id}`, specialist, { values: { [f.key]: 'z' } }), 400, 'validation_error');
      // A new form from that template now refuses: its field is gone.
      assertError(
        await call('POST', '/v1/forms', specialist, { form_template_id: tpl.id, patient_id: patientId }),
        409,
        'template_out_of_date',
      );
      for (const role of ['app_rls', 'app_bypass'] as const) {
        for (const sql of [
          `update form_field_snapshots set label = 'x' where form_id = '${form.id}'`,
          `delete from form_field_snapshots where form_id = '${form.id}'`,
        ]) {
          await assert.rejects(
            t.db.withScope(
              { role, principalId: null, orgId: org, permissions: ['forms.create', 'forms.fill_org', 'forms.view_org'] },
              (tx) => tx.query(sql),
            ),
            /permission denied|append-only/,
          );
        }
      }
      await assert.rejects(t.db.query(`update form_field_snapshots set label = 'x' where form_id = $1`, [form.id]), /append-only/);
    });

    it('fill validates every type against the snapshot; null clears; nothing is written on a bad value', async () => {
      const form = await newForm();
      const good = {
        pain: 4,
        side: 'left',
        symptoms: ['a', 'c'],
        since: '2026-02-28',
        smoker: false,
        story: 'long '.repeat(300),
        assessment: 'fine',
      };
      const filled = dataOf(await call('PATCH', `/v1/forms/${form.id}`, specialist, { values: good }));
      assert.deepEqual(filled.values, good);
      const bad: Record<string, unknown> = {
        pain: '4',
        side: 'middle',
        symptoms: ['a', 'a'],
        since: '2026-02-30',
        smoker: 'no',
        story: 5,
        unknown_key: 1,
      };
      const err = assertError(await call('PATCH', `/v1/forms/${form.id}`, specialist, { values: bad }), 400, 'validation_error');
      assert.deepEqual(
        Object.keys(err.fields).sort(),
        Object.keys(bad)
          .map((k) => `values.${k}`)
          .sort(),
      );
      assert.deepEqual(dataOf(await call('GET', `/v1/forms/${form.id}`, specialist)).values, good);
      const cleared = dataOf(await call('PATCH', `/v1/forms/${form.id}`, specialist, { values: { story: null } }));
      assert.equal(cleared.values.story, undefined);
      assertError(
        await call('PATCH', `/v1/forms/${form.id}`, specialist, { values: {}, patient_id: otherPatientId }),
        400,
        'validation_error',
      );
    });

    it('patient callers: private fields and internal ids stripped, private keys unknown, ownership fields dropped silently', async () => {
      const form = await newForm();
      await call('PATCH', `/v1/forms/${form.id}`, specialist, { values: { assessment: 'staff only', pain: 2 } });
      const seen = dataOf(await call('GET', `/v1/forms/${form.id}`, patient.token));
      assert.ok(!seen.fields.some((f: any) => f.key === 'assessment'));
      assert.ok(seen.fields.every((f: any) => !('custom_field_id' in f) && !('private' in f)));
      assert.deepEqual(seen.values, { pain: 2 });
      assert.ok(!('created_by_principal_id' in seen) && !('signed_by_principal_id' in seen));
      assertError(await call('PATCH', `/v1/forms/${form.id}`, patient.token, { values: { assessment: 'mine' } }), 400, 'validation_error');
      const filled = dataOf(
        await call('PATCH', `/v1/forms/${form.id}`, patient.token, {
          values: { side: 'right' },
          patient_id: otherPatientId,
          organization_id: otherOrg,
          status: 'signed',
        }),
      );
      assert.equal(filled.patient_id, patientId);
      assert.equal(filled.status, 'pending');
      const { rows } = await t.db.query<{ patient_id: string; values: any }>('select patient_id, "values" from forms where id = $1', [
        form.id,
      ]);
      assert.deepEqual(rows[0], { patient_id: patientId, values: { assessment: 'staff only', pain: 2, side: 'right' } });
      // Another patient of the same clinic sees nothing of it.
      assertError(await call('GET', `/v1/forms/${form.id}`, otherPatient.token), 404, 'not_found');
      assertError(await call('PATCH', `/v1/forms/${form.id}`, otherPatient.token, { values: { pain: 1 } }), 404, 'not_found');
      const mine = await t.call('GET', '/v1/forms', { token: patient.token, org });
      assert.ok(mine.json().data.length >= 1);
      assert.ok(mine.json().data.every((f: any) => f.patient_id === patientId));
      assert.equal((await t.call('GET', '/v1/forms', { token: otherPatient.token, org })).json().pagination.total, 0);
      // A patient neither creates nor deletes forms.
      assertError(
        await call('POST', '/v1/forms', patient.token, { form_template_id: template.id, patient_id: patientId }),
        403,
        'forbidden',
      );
      assertError(await call('DELETE', `/v1/forms/${form.id}`, patient.token), 403, 'forbidden');
    });

    it('sign: required fields first; pending -> signed once (second sign 409); then immutable through the API', async () => {
      const form = await newForm();
      const err = assertError(await call('POST', `/v1/forms/${form.id}/sign`, specialist), 400, 'validation_error');
      assert.ok(err.fields['values.pain']);
      await call('PATCH', `/v1/forms/${form.id}`, specialist, { values: { pain: 3 } });
      const fileRes = await upload(form.id, specialist, { name: 'scan.png', type: 'image/png', bytes: PNG });
      const file = dataOf(fileRes, 201);
      const signed = dataOf(await call('POST', `/v1/forms/${form.id}/sign`, patient.token));
      assert.equal(signed.status, 'signed');
      assert.ok(signed.signed_at);
      assertError(await call('POST', `/v1/forms/${form.id}/sign`, specialist), 409, 'already_signed');
      assertError(await call('PATCH', `/v1/forms/${form.id}`, specialist, { values: { pain: 9 } }), 409, 'form_signed');
      assertError(await call('DELETE', `/v1/forms/${form.id}`, admin), 409, 'form_signed');
      assertError(await upload(form.id, specialist, { name: 'late.png', type: 'image/png', bytes: PNG }), 409, 'form_signed');
      assertError(await call('DELETE', `/v1/forms/${form.id}/files/${file.id}`, specialist), 409, 'form_signed');
      assert.equal(dataOf(await call('GET', `/v1/forms/${form.id}/files`, specialist)).length, 1);
      const ev = await t.db.query(`select type from domain_events where data->>'id' = $1 order by id`, [form.id]);
      assert.deepEqual(
        ev.rows.map((r: any) => r.type),
        ['form.created', 'form.updated', 'form.file_added', 'form.signed'],
      );
      // The audit entry names the file by id and hash: a file name can be personal data, and the
      // append-only trail could never forget it.
      const audit = await t.db.query<{ data: any }>(`select data from audit_logs where action = 'form.file_added' and entity_id = $1`, [
        form.id,
      ]);
      assert.equal(audit.rows[0]!.data.file_id, file.id);
      assert.ok(!JSON.stringify(audit.rows[0]!.data).includes('scan.png'), JSON.stringify(audit.rows[0]!.data));
    });

    it('a signed form is immutable also against crafted SQL as the application role (and the owner)', async () => {
      const form = await newForm();
      await call('PATCH', `/v1/forms/${form.id}`, specialist, { values: { pain: 1 } });
      dataOf(await call('POST', `/v1/forms/${form.id}/sign`, specialist));
      const scope = {
        role: 'app_rls' as const,
        principalId: null,
        orgId: org,
        permissions: ['forms.fill_org', 'forms.sign', 'forms.delete_unsigned', 'forms.view_org', 'data.view_deleted'],
      };
      for (const sql of [
        `update forms set "values" = '{"pain": 10}'::jsonb where id = '${form.id}'`,
        `update forms set status = 'pending', signed_at = null, signed_by_principal_id = null where id = '${form.id}'`,
        `update forms set deleted_at = now() where id = '${form.id}'`,
        `delete from forms where id = '${form.id}'`,
      ]) {
        await assert.rejects(
          t.db.withScope(scope, (tx) => tx.query(sql)),
          /signed|permission denied/,
          sql,
        );
      }
      await assert.rejects(
        t.db.withScope({ ...scope, role: 'app_bypass' }, (tx) =>
          tx.query(`update forms set "values" = '{}'::jsonb where id = '${form.id}'`),
        ),
        /signed/,
      );
      await assert.rejects(t.db.query(`update forms set title = 'x' where id = $1`, [form.id]), /signed/);
      const { rows } = await t.db.query<{ values: any; status: string }>('select "values", status from forms where id = $1', [form.id]);
      assert.deepEqual(rows[0], { values: { pain: 1 }, status: 'signed' });
    });

    it('crafted SQL as app_rls cannot fill or delete without the codes', async () => {
      const form = await newForm();
      const scope = { role: 'app_rls' as const, principalId: null, orgId: org, permissions: ['forms.view_org', 'forms.sign'] };
      await assert.rejects(
        t.db.withScope(scope, (tx) => tx.query(`update forms set "values" = '{"pain": 1}'::jsonb where id = '${form.id}'`)),
        /fill/,
      );
      await assert.rejects(
        t.db.withScope(scope, (tx) => tx.query(`update forms set deleted_at = now() where id = '${form.id}'`)),
        /delete/,
      );
    });

    it('delete: only unsigned forms, with forms.delete_unsigned; soft', async () => {
      const form = await newForm();
      assertError(await call('DELETE', `/v1/forms/${form.id}`, specialist), 403, 'forbidden');
      dataOf(await call('DELETE', `/v1/forms/${form.id}`, admin), 204);
      assertError(await call('GET', `/v1/forms/${form.id}`, admin), 404, 'not_found');
      const { rows } = await t.db.query('select deleted_at from forms where id = $1', [form.id]);
      assert.ok((rows[0] as any).deleted_at);
    });

    it('files: upload, list, download, remove; size and type limits; the bytes live in the asset store', async () => {
      const form = await newForm();
      const added = dataOf(await upload(form.id, patient.token, { name: '../../etc/scan 1.png', type: 'image/png', bytes: PNG }), 201);
      assert.equal(added.filename, 'scan 1.png');
      assert.equal(added.size_bytes, PNG.length);
      const list = dataOf(await call('GET', `/v1/forms/${form.id}/files`, specialist));
      assert.deepEqual(
        list.map((f: any) => f.id),
        [added.id],
      );
      const dl = await t.call('GET', `/v1/forms/${form.id}/files/${added.id}`, { token: patient.token, org });
      assert.equal(dl.statusCode, 200);
      assert.equal(dl.headers['content-type'], 'image/png');
      assert.ok(String(dl.headers['content-disposition']).startsWith('attachment;'));
      assert.deepEqual(dl.rawPayload, PNG);
      const { rows } = await t.db.query<{ asset_key: string }>('select asset_key from form_files where id = $1', [added.id]);
      assert.ok(await t.rt.assets.head(rows[0]!.asset_key));
      // Limits: too large (413), a type not accepted (415), bytes that are not what they claim (415).
      assertError(
        await upload(form.id, specialist, {
          name: 'big.pdf',
          type: 'application/pdf',
          bytes: Buffer.concat([Buffer.from('%PDF-'), Buffer.alloc(5000)]),
        }),
        413,
        'file_too_large',
      );
      assertError(
        await upload(form.id, specialist, { name: 'x.exe', type: 'application/x-msdownload', bytes: Buffer.from('MZ') }),
        415,
        'unsupported_media_type',
      );
      assertError(
        await upload(form.id, specialist, { name: 'fake.pdf', type: 'application/pdf', bytes: Buffer.from('MZ not a pdf') }),
        415,
        'unsupported_media_type',
      );
      assert.equal(dataOf(await call('GET', `/v1/forms/${form.id}/files`, specialist)).length, 1);
      // Another patient, another organization, support: no access.
      assertError(await call('GET', `/v1/forms/${form.id}/files`, otherPatient.token), 404, 'not_found');
      assertError(await call('GET', `/v1/forms/${form.id}/files`, support), 403, 'forbidden');
      assertError(await call('GET', `/v1/forms/${form.id}/files`, otherAdmin, undefined, otherOrg), 404, 'not_found');
      dataOf(await call('DELETE', `/v1/forms/${form.id}/files/${added.id}`, specialist), 204);
      assert.equal(await t.rt.assets.head(rows[0]!.asset_key), null);
      assertError(await call('DELETE', `/v1/forms/${form.id}/files/${added.id}`, specialist), 404, 'not_found');
    });

    it('permissions and isolation: create needs forms.create; other organizations see nothing', async () => {
      assertError(await call('POST', '/v1/forms', support, { form_template_id: template.id, patient_id: patientId }), 403, 'forbidden');
      const form = await newForm();
      assertError(await call('GET', `/v1/forms/${form.id}`, support), 403, 'forbidden');
      assertError(await call('GET', `/v1/forms/${form.id}`, otherAdmin, undefined, otherOrg), 404, 'not_found');
      assertError(await call('PATCH', `/v1/forms/${form.id}`, otherAdmin, { values: { pain: 1 } }, otherOrg), 404, 'not_found');
      assertError(await call('POST', `/v1/forms/${form.id}/sign`, otherAdmin, undefined, otherOrg), 404, 'not_found');
      const err = assertError(
        await call('POST', '/v1/forms', otherAdmin, { form_template_id: template.id, patient_id: patientId }, otherOrg),
        400,
        'validation_error',
      );
      assert.ok(err.fields.form_template_id && err.fields.patient_id);
      const list = await call('GET', `/v1/forms?patient_id=${patientId}&status=pending&sort=-created_at`, specialist);
      assert.equal(list.statusCode, 200, list.body);
      assert.ok(list.json().data.every((f: any) => f.patient_id === patientId && f.status === 'pending'));
      assertError(await call('GET', '/v1/forms?status=done', specialist), 422, 'validation_failed');
    });
  });

  describe('orphan file sweep (worker job forms.orphan_files)', () => {
    const v7At = (ms: number) => {
      const h = ms.toString(16).padStart(12, '0');
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-7abc-8def-0123456789ab`;
    };
    it('removes objects no row names once older than the grace period, and nothing else; a second run finds nothing', async () => {
      const form = await newForm();
      const live = dataOf(await upload(form.id, specialist, { name: 'a.png', type: 'image/png', bytes: PNG }), 201);
      const { rows } = await t.db.query<{ asset_key: string }>('select asset_key from form_files where id = $1', [live.id]);
      const now = Date.now();
      const oldOrphan = `orgs/${org}/forms/${form.id}/${v7At(now - ORPHAN_GRACE_MS - 60_000)}`;
      const youngOrphan = `orgs/${org}/forms/${form.id}/${v7At(now - 60_000)}`;
      await t.rt.assets.put(oldOrphan, PNG, { contentType: 'image/png' });
      await t.rt.assets.put(youngOrphan, PNG, { contentType: 'image/png' });
      const deps = { db: t.db, assets: t.rt.assets, logger: t.rt.logger };
      assert.deepEqual(await sweepOrphanFormFiles(deps, now + 1000), [oldOrphan]);
      assert.equal(await t.rt.assets.head(oldOrphan), null);
      assert.ok(await t.rt.assets.head(youngOrphan));
      assert.ok(await t.rt.assets.head(rows[0]!.asset_key));
      assert.deepEqual(await sweepOrphanFormFiles(deps, now + 1000), []);
      // Later the young orphan goes too; the live file, named by its row, never does.
      assert.deepEqual(await sweepOrphanFormFiles(deps, now + 2 * ORPHAN_GRACE_MS), [youngOrphan]);
      assert.ok(await t.rt.assets.head(rows[0]!.asset_key));
    });
  });
});
