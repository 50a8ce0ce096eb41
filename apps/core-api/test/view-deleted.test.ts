import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SOFT_DELETED_TABLES } from '../src/platform/deleted.ts';
import { assertError, dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

/*
 * Soft-deleted rows (issue 29, defect 14): every table with a deleted_at column hides its deleted rows in
 * its read policy from callers without data.view_deleted, and the list route of each such resource takes
 * include_deleted=true from a holder (403 for others). For every resource: a member without the code
 * deletes a row (the soft delete is an UPDATE whose new row its read policy hides), then the lists, the
 * GET by id and the read policy itself (crafted SQL as app_rls) are checked for a non-holder, a holder
 * and another clinic's holder. The table list must cover every table of the schema with a deleted_at
 * column, so a new soft-deleted table fails here until it is added.
 */

interface Person {
  token: string;
  userId: string;
}

interface Resource {
  /** The list route, which is also the collection the row is deleted from (`${list}/${id}`). */
  list: string;
  /** Makes one live row in the organization; returns its id. */
  create: () => Promise<string>;
}

describe('data.view_deleted on every soft-deleted table', () => {
  let t: TestApp;
  let orgA: string;
  let orgB: string;
  let admin: Person;
  let keeper: Person;
  let adminB: Person;
  let keeperPermissions: string[];
  let adminPermissions: string[];
  let patientFor: () => Promise<string>;
  const resources = {} as Record<(typeof SOFT_DELETED_TABLES)[number], Resource>;

  const make = async (url: string, body: unknown, as: Person = admin) =>
    dataOf(await t.call('POST', url, { token: as.token, org: orgA, body }), 201);
  const hex = () => Math.random().toString(16).slice(2, 10);

  before(async () => {
    t = await startTestApp();
    orgA = (await t.createOrg()).id;
    orgB = (await t.createOrg()).id;
    admin = await t.addMember(orgA, uniqueEmail('vd-admin'), 'admin');
    adminB = await t.addMember(orgB, uniqueEmail('vd-admin-b'), 'admin');
    // The keeper holds every code of the admin role but data.view_deleted: it may create and delete everything.
    const roles = dataOf(await t.call('GET', `/v1/organizations/${orgA}/roles?limit=500`, { token: admin.token })) as {
      code: string;
      permissions: string[];
    }[];
    adminPermissions = roles.find((r) => r.code === 'admin')!.permissions;
    assert.ok(adminPermissions.includes('data.view_deleted'));
    keeperPermissions = adminPermissions.filter((p) => p !== 'data.view_deleted');
    dataOf(
      await t.call('POST', `/v1/organizations/${orgA}/roles`, {
        token: admin.token,
        body: { code: 'keeper', name: 'Keeper', permissions: keeperPermissions },
      }),
      201,
    );
    keeper = await t.addMember(orgA, uniqueEmail('vd-keeper'), 'keeper');
    await t.db.query(
      `insert into telerehab_settings (organization_id, enabled, intended_use_version, intended_use_accepted_at) values ($1, true, '1', now())
       on conflict do nothing`,
      [orgA],
    );
    const squat = (await t.db.query<{ id: string }>(`select id from exercises where slug = 'squat' and organization_id is null`)).rows[0]!
      .id;

    patientFor = async () => {
      const p = await t.addPatient(orgA, uniqueEmail('vd-patient'));
      return (await t.db.query<{ id: string }>('select id from patients where organization_id = $1 and user_id = $2', [orgA, p.userId]))
        .rows[0]!.id;
    };
    const field = async () =>
      (await make('/v1/custom-fields', { entity_type: 'form', key: `k_${hex()}`, label: 'Note', field_type: 'text' })).id;
    const template = async () =>
      (await make('/v1/form-templates', { name: `Form ${hex()}`, fields: [{ custom_field_id: await field() }] })).id;

    Object.assign(resources, {
      automation_rules: {
        list: '/v1/automation-rules',
        create: async () =>
          (
            await make('/v1/automation-rules', {
              name: `Rule ${hex()}`,
              trigger: { type: 'event', event_type: 'appointment.created' },
              actions: [{ type: 'call_webhooks' }],
            })
          ).id,
      },
      custom_fields: { list: '/v1/custom-fields', create: field },
      form_templates: { list: '/v1/form-templates', create: template },
      forms: {
        list: '/v1/forms',
        create: async () => (await make('/v1/forms', { form_template_id: await template(), patient_id: await patientFor() })).id,
      },
      patients: { list: '/v1/patients', create: patientFor },
      pdf_templates: {
        list: '/v1/pdf-templates',
        create: async () =>
          (
            await make('/v1/pdf-templates', {
              name: `Pdf ${hex()}`,
              kind: 'form',
              layout: { blocks: [{ type: 'heading', text: '{{form.title}}' }] },
            })
          ).id,
      },
      specialists: {
        list: '/v1/specialists',
        create: async () => {
          const member = await t.addMember(orgA, uniqueEmail('vd-specialist'), 'specialist');
          return (await make('/v1/specialists', { user_id: member.userId, display_name: `Dr ${hex()}` })).id;
        },
      },
      treatment_plans: {
        list: '/v1/treatment-plans',
        create: async () =>
          (
            await make('/v1/treatment-plans', {
              name: `Knee ${hex()}`,
              phases: [{ name: 'W1', days: [{ items: [{ exercise_id: squat, sets: [{ side: 'left', reps: 10 }] }] }] }],
            })
          ).id,
      },
    } satisfies Record<(typeof SOFT_DELETED_TABLES)[number], Resource>);
  });
  after(() => t?.close());

  it('covers every table of the schema with a deleted_at column', async () => {
    const { rows } = await t.db.query<{ table_name: string }>(
      `select c.table_name from information_schema.columns c join information_schema.tables tb
         on tb.table_schema = c.table_schema and tb.table_name = c.table_name and tb.table_type = 'BASE TABLE'
       where c.table_schema = 'public' and c.column_name = 'deleted_at' order by 1`,
    );
    assert.deepEqual(
      rows.map((r) => r.table_name),
      [...SOFT_DELETED_TABLES].sort(),
      'a table with soft deletion is missing from SOFT_DELETED_TABLES (platform/deleted.ts) and from this test',
    );
    assert.deepEqual(Object.keys(resources).sort(), [...SOFT_DELETED_TABLES].sort());
  });

  for (const table of SOFT_DELETED_TABLES) {
    it(`${table}: a non-holder deletes; only a holder of the organization lists the deleted row, with include_deleted=true`, async () => {
      const r = resources[table];
      const id = await r.create();
      const live = await r.create();
      // A member without data.view_deleted soft-deletes: the UPDATE's new row is hidden from it by the read policy.
      dataOf(await t.call('DELETE', `${r.list}/${id}`, { token: keeper.token, org: orgA }), 204);

      const ids = async (as: Person, org: string, query = '') => {
        const res = await t.call('GET', `${r.list}?limit=500${query}`, { token: as.token, org });
        return (dataOf(res) as { id: string }[]).map((x) => x.id);
      };
      // Default lists hide deleted rows from everyone.
      for (const as of [keeper, admin]) {
        const seen = await ids(as, orgA);
        assert.ok(seen.includes(live), `${table}: the live row is listed`);
        assert.ok(!seen.includes(id), `${table}: a deleted row in the default list`);
        assert.ok(!(await ids(as, orgA, '&include_deleted=false')).includes(id), `${table}: include_deleted=false`);
      }
      // A non-holder is refused; a holder sees the row, beside the live ones.
      assertError(await t.call('GET', `${r.list}?include_deleted=true`, { token: keeper.token, org: orgA }), 403, 'forbidden');
      const holder = await ids(admin, orgA, '&include_deleted=true');
      assert.ok(holder.includes(id) && holder.includes(live), `${table}: the holder lists deleted and live rows`);
      // Another clinic's holder never sees it.
      assert.ok(!(await ids(adminB, orgB, '&include_deleted=true')).includes(id), `${table}: another clinic`);
      // Not a boolean: the query's validation error (422 validation_failed, as every list's query).
      assertError(await t.call('GET', `${r.list}?include_deleted=yes`, { token: admin.token, org: orgA }), 422, 'validation_failed');
      // One deleted row by id is gone for everyone, as for patients, specialists and forms.
      for (const as of [keeper, admin])
        assertError(await t.call('GET', `${r.list}/${id}`, { token: as.token, org: orgA }), 404, 'not_found');

      // The read policy itself (what a reverted policy would fail): crafted SQL as the application role.
      const see = (principal: Person, permissions: string[], org = orgA) =>
        t.db.withScope({ role: 'app_rls', principalId: principal.userId, orgId: org, permissions }, async (tx) =>
          (await tx.query(`select id from ${table} where id = any($1::uuid[])`, [[id, live]])).rows.map((x) => x.id as string).sort(),
        );
      assert.deepEqual(await see(keeper, keeperPermissions), [live], `${table}: read policy without data.view_deleted`);
      assert.deepEqual(await see(admin, adminPermissions), [id, live].sort(), `${table}: read policy with data.view_deleted`);
      assert.deepEqual(await see(adminB, adminPermissions, orgB), [], `${table}: read policy of another organization`);
    });
  }

  it('patients: q finds deleted patients too with include_deleted=true (the search index holds live ones only)', async () => {
    const name = `Zed${hex()}`;
    const [gone, live] = [await patientFor(), await patientFor()];
    await t.db.query('update patients set last_name = $2 where id = any($1::uuid[])', [[gone, live], name]);
    dataOf(await t.call('DELETE', `/v1/patients/${gone}`, { token: keeper.token, org: orgA }), 204);
    const found = async (query: string) => {
      const res = await t.call('GET', `/v1/patients?q=${name.toLowerCase()}${query}`, { token: admin.token, org: orgA });
      return { ids: (dataOf(res) as { id: string }[]).map((p) => p.id).sort(), total: res.json().pagination.total };
    };
    assert.deepEqual(await found(''), { ids: [live], total: 1 });
    assert.deepEqual(await found('&include_deleted=true'), { ids: [gone, live].sort(), total: 2 });
  });
});
