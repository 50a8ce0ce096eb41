import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, MISSING_UUID, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

// Custom fields with versions (spec 2.10, 3.1 every transition, 4.8 every endpoint).

describe('custom fields', () => {
  let t: TestApp;
  let orgA: string;
  let orgB: string;
  let adminA: string;
  let adminB: string;
  let specialistA: string;
  let patientA: string;
  let su: string;

  before(async () => {
    t = await startTestApp();
    orgA = (await t.createOrg({ name: 'Clinic A' })).id;
    orgB = (await t.createOrg({ name: 'Clinic B' })).id;
    adminA = (await t.addMember(orgA, uniqueEmail('admin-a'), 'admin')).token;
    adminB = (await t.addMember(orgB, uniqueEmail('admin-b'), 'admin')).token;
    specialistA = (await t.addMember(orgA, uniqueEmail('spec-a'), 'specialist')).token;
    patientA = (await t.addPatient(orgA, uniqueEmail('patient-a'))).token;
    su = await t.superadmin();
  });
  after(() => t.close());

  const call = (method: string, url: string, token: string, body?: unknown, org = orgA) =>
    t.call(method, url, { token, org, ...(body !== undefined ? { body } : {}) });
  let n = 0;
  const create = async (body: Record<string, unknown> = {}, token = adminA, org = orgA) =>
    dataOf(
      await call(
        'POST',
        '/v1/custom-fields',
        token,
        { entity_type: 'patient', key: `field_${++n}`, label: 'Allergies', field_type: 'text', ...body },
        org,
      ),
      201,
    );

  it('POST creates a published field at version 1 and archives the version 1 snapshot', async () => {
    const f = await create({ field_type: 'select', options: ['a', 'b'], system_key: 'sys.blood_type' });
    assert.equal(f.version, 1);
    assert.equal(f.published, true);
    assert.ok(f.published_at);
    assert.equal(f.system_key, 'sys.blood_type');
    const versions = await call('GET', `/v1/custom-fields/${f.id}/versions`, adminA);
    assert.equal(versions.statusCode, 200, versions.body);
    assert.deepEqual(versions.json().pagination, { page: 1, limit: 50, total: 1 });
    assert.deepEqual(versions.json().data[0].fields, {
      key: f.key,
      label: 'Allergies',
      field_type: 'select',
      options: ['a', 'b'],
      private: false,
    });
    const audit = await t.db.query(`select action from audit_logs where entity_id = $1`, [f.id]);
    assert.deepEqual(
      audit.rows.map((r: any) => r.action),
      ['custom_field.created'],
    );
    const ev = await t.db.query<{ type: string; organization_id: string }>(
      `select type, organization_id from domain_events where data->>'id' = $1`,
      [f.id],
    );
    assert.deepEqual(ev.rows, [{ type: 'custom_field.published', organization_id: orgA }]);
  });

  it('the whole lifecycle of spec 3.1: published -> draft -> draft -> published v2 -> rollback draft -> published v3', async () => {
    const f = await create({ label: 'One' });
    // published -> PATCH -> draft, same version; fields updated in place.
    const d1 = dataOf(await call('PATCH', `/v1/custom-fields/${f.id}`, adminA, { label: 'Two' }));
    assert.deepEqual([d1.version, d1.published, d1.label], [1, false, 'Two']);
    assert.equal(d1.published_at, f.published_at);
    // draft -> PATCH -> draft.
    const d2 = dataOf(await call('PATCH', `/v1/custom-fields/${f.id}`, adminA, { label: 'Three', key: `renamed_${n}` }));
    assert.deepEqual([d2.version, d2.published, d2.label], [1, false, 'Three']);
    // Nothing archived by drafts.
    assert.equal(dataOf(await call('GET', `/v1/custom-fields/${f.id}/versions`, adminA)).length, 1);
    // draft -> publish -> published, version + 1, published_at set.
    const p2 = dataOf(await call('POST', `/v1/custom-fields/${f.id}/publish`, adminA));
    assert.deepEqual([p2.version, p2.published, p2.label], [2, true, 'Three']);
    assert.ok(new Date(p2.published_at) >= new Date(f.published_at));
    // publish with no draft: 409.
    assertError(await call('POST', `/v1/custom-fields/${f.id}/publish`, adminA), 409, 'already_published');
    // any -> rollback { version: 1 } -> draft holding version 1's snapshot.
    const rb = dataOf(await call('POST', `/v1/custom-fields/${f.id}/rollback`, adminA, { version: 1 }));
    assert.deepEqual([rb.version, rb.published, rb.label, rb.key], [2, false, 'One', f.key]);
    // publishing it makes the next number.
    const p3 = dataOf(await call('POST', `/v1/custom-fields/${f.id}/publish`, adminA));
    assert.deepEqual([p3.version, p3.published, p3.label], [3, true, 'One']);
    // versions newest first, and one version.
    const versions = dataOf(await call('GET', `/v1/custom-fields/${f.id}/versions`, adminA));
    assert.deepEqual(
      versions.map((v: any) => [v.version, v.fields.label]),
      [
        [3, 'One'],
        [2, 'Three'],
        [1, 'One'],
      ],
    );
    const v2 = dataOf(await call('GET', `/v1/custom-fields/${f.id}/versions/2`, adminA));
    assert.deepEqual([v2.version, v2.fields.key], [2, `renamed_${n}`]);
    assertError(await call('GET', `/v1/custom-fields/${f.id}/versions/9`, adminA), 404, 'not_found');
    assertError(await call('GET', `/v1/custom-fields/${f.id}/versions/abc`, adminA), 404, 'not_found');
    // rollback to a version that does not exist: 404, nothing changes.
    assertError(await call('POST', `/v1/custom-fields/${f.id}/rollback`, adminA, { version: 7 }), 404, 'not_found');
    assert.equal(dataOf(await call('GET', `/v1/custom-fields/${f.id}`, adminA)).published, true);
    const events = await t.db.query<{ type: string }>(`select type from domain_events where data->>'id' = $1 order by id`, [f.id]);
    assert.deepEqual(
      events.rows.map((r) => r.type),
      [
        'custom_field.published',
        'custom_field.updated',
        'custom_field.updated',
        'custom_field.published',
        'custom_field.updated',
        'custom_field.published',
      ],
    );
  });

  it('rollback from the published state also yields a draft', async () => {
    const f = await create();
    const rb = dataOf(await call('POST', `/v1/custom-fields/${f.id}/rollback`, adminA, { version: 1 }));
    assert.deepEqual([rb.version, rb.published], [1, false]);
    assert.equal(dataOf(await call('POST', `/v1/custom-fields/${f.id}/publish`, adminA)).version, 2);
  });

  it('validates definitions: key shape, options only and always for choice types, unknown properties; nothing is written', async () => {
    const bad = async (body: Record<string, unknown>, field: string) => {
      const err = assertError(
        await call('POST', '/v1/custom-fields', adminA, { entity_type: 'patient', key: 'ok_key', label: 'L', field_type: 'text', ...body }),
        400,
        'validation_error',
      );
      assert.ok(err.fields[field], JSON.stringify(err));
    };
    await bad({ key: 'Bad-Key' }, 'key');
    await bad({ field_type: 'select' }, 'options');
    await bad({ field_type: 'select', options: ['x', 'x'] }, 'options');
    await bad({ options: ['x'] }, 'options');
    await bad({ field_type: 'colour' }, 'field_type');
    await bad({ entity_type: 'appointment' }, 'entity_type');
    await bad({ label: '   ' }, 'label');
    await bad({ version: 3 }, 'version');
    const { rows } = await t.db.query(`select 1 from custom_fields where key = 'ok_key'`);
    assert.equal(rows.length, 0);
    const f = await create();
    const err = assertError(await call('PATCH', `/v1/custom-fields/${f.id}`, adminA, { system_key: 'x' }), 400, 'validation_error');
    assert.ok(err.fields.system_key);
    assertError(await call('PATCH', `/v1/custom-fields/${f.id}`, adminA, {}), 400, 'validation_error');
    assertError(await call('PATCH', `/v1/custom-fields/${f.id}`, adminA, { field_type: 'select' }), 400, 'validation_error');
  });

  it('a key is unique among the live fields of one entity type (409), and free again after deletion', async () => {
    const f = await create({ key: 'unique_key' });
    assertError(
      await call('POST', '/v1/custom-fields', adminA, { entity_type: 'patient', key: 'unique_key', label: 'L', field_type: 'text' }),
      409,
      'custom_field_key_taken',
    );
    // Another entity type or another organization may use it.
    await create({ key: 'unique_key', entity_type: 'specialist' });
    await create({ key: 'unique_key' }, adminB, orgB);
    dataOf(await call('DELETE', `/v1/custom-fields/${f.id}`, adminA), 204);
    await create({ key: 'unique_key' });
  });

  it('system_key never changes across versions, not even by a crafted UPDATE as the owner', async () => {
    const f = await create({ system_key: 'sys.height' });
    await call('PATCH', `/v1/custom-fields/${f.id}`, adminA, { label: 'Height (cm)', key: `height_${n}` });
    const p = dataOf(await call('POST', `/v1/custom-fields/${f.id}/publish`, adminA));
    assert.equal(p.system_key, 'sys.height');
    const rb = dataOf(await call('POST', `/v1/custom-fields/${f.id}/rollback`, adminA, { version: 1 }));
    assert.equal(rb.system_key, 'sys.height');
    await assert.rejects(t.db.query(`update custom_fields set system_key = 'sys.other' where id = $1`, [f.id]), /never changes/);
  });

  it('version snapshots are append-only at the database level, for the application roles and the owner', async () => {
    const f = await create();
    for (const role of ['app_rls', 'app_bypass'] as const) {
      for (const sql of [
        `update custom_field_versions set fields_snapshot = '{}'::jsonb where custom_field_id = '${f.id}'`,
        `delete from custom_field_versions where custom_field_id = '${f.id}'`,
        'truncate custom_field_versions',
      ]) {
        await assert.rejects(
          t.db.withScope({ role, principalId: null, orgId: orgA, permissions: ['custom_fields.manage'] }, (tx) => tx.query(sql)),
          /permission denied|append-only/,
          `${role}: ${sql}`,
        );
      }
    }
    await assert.rejects(t.db.query(`update custom_field_versions set version = 99 where custom_field_id = $1`, [f.id]), /append-only/);
    assert.equal(dataOf(await call('GET', `/v1/custom-fields/${f.id}/versions/1`, adminA)).fields.label, 'Allergies');
  });

  it('delete is soft: the field leaves reads and lists, its versions stay in the database', async () => {
    const f = await create();
    dataOf(await call('DELETE', `/v1/custom-fields/${f.id}`, adminA), 204);
    assertError(await call('GET', `/v1/custom-fields/${f.id}`, adminA), 404, 'not_found');
    assertError(await call('DELETE', `/v1/custom-fields/${f.id}`, adminA), 404, 'not_found');
    assertError(await call('PATCH', `/v1/custom-fields/${f.id}`, adminA, { label: 'x' }), 404, 'not_found');
    const list = dataOf(await call('GET', '/v1/custom-fields?limit=500', adminA));
    assert.ok(!list.some((x: any) => x.id === f.id));
    const { rows } = await t.db.query(`select deleted_at from custom_fields where id = $1`, [f.id]);
    assert.ok((rows[0] as any).deleted_at);
    const v = await t.db.query(`select version from custom_field_versions where custom_field_id = $1`, [f.id]);
    assert.equal(v.rows.length, 1);
  });

  it('list: filters, sort allow-list, pagination envelope', async () => {
    const org = (await t.createOrg()).id;
    const admin = (await t.addMember(org, uniqueEmail('admin-l'), 'admin')).token;
    const a = await create({ key: 'alpha', entity_type: 'specialist' }, admin, org);
    const b = await create({ key: 'beta' }, admin, org);
    await call('PATCH', `/v1/custom-fields/${b.id}`, admin, { label: 'Draft' }, org);
    const all = await call('GET', '/v1/custom-fields?sort=key', admin, undefined, org);
    assert.deepEqual(
      all.json().data.map((x: any) => x.key),
      ['alpha', 'beta'],
    );
    assert.equal(all.json().pagination.total, 2);
    assert.deepEqual(
      dataOf(await call('GET', '/v1/custom-fields?entity_type=specialist', admin, undefined, org)).map((x: any) => x.id),
      [a.id],
    );
    assert.deepEqual(
      dataOf(await call('GET', '/v1/custom-fields?published=false', admin, undefined, org)).map((x: any) => x.id),
      [b.id],
    );
    assert.deepEqual(
      dataOf(await call('GET', '/v1/custom-fields', admin, undefined, org)).map((x: any) => x.id),
      [b.id, a.id],
    );
    assertError(await call('GET', '/v1/custom-fields?sort=version', admin, undefined, org), 422, 'validation_failed');
  });

  it('permissions: writes need custom_fields.manage, reads staff; patients, other organizations and no scope are refused', async () => {
    const f = await create();
    assertError(
      await call('POST', '/v1/custom-fields', specialistA, { entity_type: 'patient', key: 'x', label: 'x', field_type: 'text' }),
      403,
      'forbidden',
    );
    assertError(await call('PATCH', `/v1/custom-fields/${f.id}`, specialistA, { label: 'x' }), 403, 'forbidden');
    assertError(await call('POST', `/v1/custom-fields/${f.id}/publish`, specialistA), 403, 'forbidden');
    assertError(await call('POST', `/v1/custom-fields/${f.id}/rollback`, specialistA, { version: 1 }), 403, 'forbidden');
    assertError(await call('DELETE', `/v1/custom-fields/${f.id}`, specialistA), 403, 'forbidden');
    assert.equal(dataOf(await call('GET', `/v1/custom-fields/${f.id}`, specialistA)).id, f.id);
    assertError(await call('GET', '/v1/custom-fields', patientA), 403, 'forbidden');
    assertError(await call('GET', `/v1/custom-fields/${f.id}/versions`, patientA), 403, 'forbidden');
    // Another organization's admin, in its own scope, does not find it.
    assertError(await call('GET', `/v1/custom-fields/${f.id}`, adminB, undefined, orgB), 404, 'not_found');
    assertError(await call('PATCH', `/v1/custom-fields/${f.id}`, adminB, { label: 'x' }, orgB), 404, 'not_found');
    assertError(await call('GET', `/v1/custom-fields/${f.id}/versions/1`, adminB, undefined, orgB), 404, 'not_found');
    // ... and naming organization A gets it nothing.
    assertError(await call('GET', `/v1/custom-fields/${f.id}`, adminB), 403, 'forbidden');
    assertError(await call('GET', `/v1/custom-fields/${MISSING_UUID}`, adminA), 404, 'not_found');
    // A superadmin passes, but must name the organization.
    assert.equal(dataOf(await call('GET', `/v1/custom-fields/${f.id}`, su)).id, f.id);
    const noScope = await t.call('GET', '/v1/custom-fields', { token: su });
    assertError(noScope, 400, 'validation_error');
  });

  it('a row-level security check as app_rls: another organization in the settings sees no field', async () => {
    await create();
    const n = await t.db.withScope(
      { role: 'app_rls', principalId: null, orgId: orgB, permissions: ['custom_fields.manage'] },
      async (tx) =>
        (await tx.query<{ n: number }>('select count(*)::int as n from custom_fields where organization_id = $1', [orgA])).rows[0]!.n,
    );
    assert.equal(n, 0);
  });
});
