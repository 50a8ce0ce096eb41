import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { DECLARED_REFERENCES } from '../src/platform/references.ts';
import { dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';
import { clinicRows } from './support/clinic-rows.ts';

/*
 * Every id inside a request body names a row of the caller's organization, or the request is refused with
 * 400 validation_error naming the field. The table is the routes' own declarations (config.references); the
 * OpenAPI walk makes sure that every uuid field of every request body is declared or exempted here with a reason,
 * so a new field cannot be forgotten. Each declared field is tried with another clinic's row of its table.
 */

type Schema = Record<string, any>;

/** Body uuid fields that name no row of the caller's organization's tables, and why. */
const EXEMPT: Record<string, string> = {
  'PUT /v1/me/switch-organization organization_id': 'names the organization to switch to; the route checks membership',
  'POST /v1/exercises/{id}/propagate organization_ids[]': 'superadmin: names the organizations to copy a platform exercise into',
  'POST /v1/me/consents grants[].organization_id':
    "the person's own consents, in any clinic it is a patient of; checked by the consent service",
  'POST /v1/me/consents grants[].source_form_id': 'a form of the organization named by the grant, checked by the consent service',
  'POST /v1/portal/onboard grants[].organization_id': 'the clinic being joined; checked by the onboarding service',
  'POST /v1/portal/onboard grants[].source_form_id': 'a form of the organization named by the grant, checked by the consent service',
  'POST /v1/portal/onboard organization_id': 'the clinic being joined; checked by the onboarding service',
  'POST /v1/organizations/{org_id}/patients/{patient_id}/consents/grant grants[].organization_id':
    'must equal the organization of the path; checked by the consent service',
  'POST /v1/gdpr/restrict patient_id': "the subject of the request, like a path id: another clinic's patient is 404",
  'POST /v1/gdpr/erase patient_id': "the subject of the request, like a path id: another clinic's patient is 404",
  'POST /v1/gdpr/export patient_id': "the subject of the request, like a path id: another clinic's patient is 404",
  'POST /v1/gdpr/restrict user_id': 'a person (platform-wide account), not a row of an organization',
  'POST /v1/gdpr/erase user_id': 'a person (platform-wide account), not a row of an organization',
  'POST /v1/gdpr/export user_id': 'a person (platform-wide account), not a row of an organization',
  'POST /v1/break-glass/sessions organization_id': 'superadmin: names the organization to break into',
  'POST /v1/admin/platform-service-providers organization_id': 'superadmin: names the organization a provider row serves',
  'POST /v1/admin/audit-chains/verify organization_id': 'superadmin: names the chain to verify; an unknown organization is 404',
  'POST /v1/public/holds location_id': 'public route: resolved in the organization the body names, by the booking service',
  'POST /v1/public/holds service_id': 'public route: resolved in the organization the body names, by the booking service',
  'POST /v1/public/holds specialist_id': 'public route: resolved in the organization the body names, by the booking service',
  'POST /v1/public/bookings hold_id': 'public route: a hold is found with its secret in the organization the body names',
};

/** Operations only a patient makes (for itself). */
const PATIENT_OPERATIONS = new Set(['POST /v1/exercise-sessions']);

function uuidFields(spec: Schema, raw: Schema, path: string, out: Set<string>, depth = 0): void {
  let s = raw;
  while (s?.$ref) s = spec.components.schemas[String(s.$ref).split('/').pop()!];
  if (!s || depth > 8) return;
  for (const k of ['anyOf', 'oneOf', 'allOf']) for (const a of s[k] ?? []) uuidFields(spec, a, path, out, depth + 1);
  if (s.format === 'uuid') out.add(path);
  if (s.items) uuidFields(spec, s.items, `${path}[]`, out, depth + 1);
  for (const [k, v] of Object.entries<Schema>(s.properties ?? {})) uuidFields(spec, v, path ? `${path}.${k}` : k, out, depth + 1);
}

/** The smallest body its schema accepts: required keys only, first enum values, lower bounds. */
function minimal(spec: Schema, raw: Schema, depth = 0): unknown {
  let s = raw;
  while (s?.$ref) s = spec.components.schemas[String(s.$ref).split('/').pop()!];
  if (s.anyOf ?? s.oneOf) return minimal(spec, (s.anyOf ?? s.oneOf).find((a: Schema) => a.type !== 'null') ?? {}, depth);
  if (s.const !== undefined) return s.const;
  if (s.enum) return s.enum[0];
  switch (Array.isArray(s.type) ? s.type[0] : s.type) {
    case 'string':
      if (s.format === 'uuid') return randomUUID();
      if (s.format === 'date-time') return new Date(Date.now() + 3 * 86_400_000).toISOString();
      if (s.format === 'date') return new Date(Date.now() + 3 * 86_400_000).toISOString().slice(0, 10);
      if (s.format === 'email') return 'someone@example.com';
      if (s.pattern === '^([01][0-9]|2[0-3]):[0-5][0-9]$' || /HH:MM/.test(s.description ?? '')) return '09:00';
      return 'x'.repeat(Math.max(1, s.minLength ?? 1));
    case 'integer':
    case 'number':
      return Math.max(1, s.minimum ?? 1);
    case 'boolean':
      return false;
    case 'array':
      return depth > 6 ? [] : Array.from({ length: s.minItems ?? 0 }, () => minimal(spec, s.items ?? {}, depth + 1));
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const k of s.required ?? []) out[k] = minimal(spec, s.properties?.[k] ?? {}, depth + 1);
      return out;
    }
    default:
      return {};
  }
}

/** Sets `value` at a declared path (`a[].b`), making the containers on the way from the schema; returns the concrete field. */
function setAt(spec: Schema, body: Record<string, unknown>, schema: Schema, pattern: string, value: string): string {
  const steps = pattern.split('.');
  let node: any = body;
  let s: Schema | undefined = schema;
  const at: string[] = [];
  const deref = (x: Schema | undefined) => {
    let y = x;
    while (y?.$ref) y = spec.components.schemas[String(y.$ref).split('/').pop()!];
    if (y?.anyOf) y = y.anyOf.find((a: Schema) => a.type !== 'null');
    return y;
  };
  steps.forEach((step, i) => {
    const last = i === steps.length - 1;
    const array = step.endsWith('[]');
    const key = array ? step.slice(0, -2) : step;
    s = deref(deref(s)?.properties?.[key]);
    at.push(key);
    if (array) {
      const itemSchema = deref(s?.items);
      if (!Array.isArray(node[key]) || !node[key].length) node[key] = [last ? value : itemSchema ? minimal(spec, itemSchema) : {}];
      if (last) node[key][0] = value;
      // A list of ids is named as the list; a list of objects by the item's field.
      if (!last) at.push('0');
      node = node[key][0];
      s = itemSchema;
    } else if (last) node[key] = value;
    else {
      if (typeof node[key] !== 'object' || node[key] === null) node[key] = s ? minimal(spec, s) : {};
      node = node[key];
    }
  });
  return at.join('.');
}

describe('ids in request bodies resolve in the caller organization', () => {
  let t: TestApp;
  let spec: Schema;
  let adminA: string;
  let orgA: string;
  let patientA: string;
  /** One row of each table in the other clinic. */
  const foreign: Record<string, string> = {};
  /** One row of each parent table in the caller's clinic, for the routes' path ids. */
  const own: Record<string, string> = {};

  before(async () => {
    t = await startTestApp();
    spec = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    orgA = (await t.createOrg({ name: 'Clinic A' })).id;
    adminA = (await t.addMember(orgA, uniqueEmail('refs-a'), 'admin')).token;
    patientA = (await t.addPatient(orgA, uniqueEmail('refs-a-patient'))).token;
    // Exercise sessions need the patient's biometric consent before anything else.
    const su = await t.superadmin();
    const version = dataOf(
      await t.call('POST', '/v1/admin/consent-purposes/biometric/versions', {
        token: su,
        body: { body_translations: { en: 'Biometric' } },
      }),
      201,
    ).version;
    dataOf(
      await t.call('POST', '/v1/me/consents', {
        token: patientA,
        body: { grants: [{ organization_id: orgA, purpose_code: 'biometric', purpose_version: version, source: 'self_toggle' }] },
      }),
      201,
    );
    const orgB = (await t.createOrg({ name: 'Clinic B' })).id;
    const b = await t.addMember(orgB, uniqueEmail('refs-b'), 'admin');
    await t.addPatient(orgB, uniqueEmail('refs-b-patient'));
    const make = async (url: string, body: unknown) => dataOf(await t.call('POST', url, { token: b.token, org: orgB, body }), 201);
    const hex = () => Math.random().toString(16).slice(2, 8);
    const location = await make(`/v1/organizations/${orgB}/locations`, { name: 'B room', timezone: 'Europe/Bucharest' });
    const field = await make('/v1/custom-fields', { entity_type: 'form', key: 'b_note', label: 'Note', field_type: 'text' });
    await make('/v1/form-templates', { name: 'B form', fields: [{ custom_field_id: field.id }] });
    await make('/v1/specialists', { user_id: b.userId, display_name: 'Dr B', location_ids: [location.id] });
    await make('/v1/services', { name: 'B visit', duration_minutes: 30, price_minor: 100, currency: 'RON', mode: 'in_person' });
    await make('/v1/specialties', { code: `b-${hex()}`, name: 'B specialty' });
    await make('/v1/products', { name: 'B brace', sku: `B-${hex()}`, price_minor: 100, currency: 'RON' });
    await make('/v1/segments', { name: 'B segment', criteria: { field: 'patient.date_of_birth', op: 'before', value: '2024-02-29' } });
    await make('/v1/message-templates', { name: 'B sms', channel: 'sms', content: { en: { text: 'hi' } } });
    await make('/v1/pdf-templates', { name: 'B pdf', kind: 'form', layout: { blocks: [{ type: 'heading', text: '{{form.title}}' }] } });
    await make('/v1/exercises', { slug: `b-${hex()}`, name: 'B exercise', kind: 'reps_based' });
    // The caller's own parents, so that each route gets past its 404 to the body.
    const mine = async (url: string, body: unknown) => dataOf(await t.call('POST', url, { token: adminA, org: orgA, body }), 201);
    // One row of each parent kind (location, form, specialist with hours, service, plan, appointment, treatment
    // plan, ...), plus the two the shared set does not make.
    const { rows: aRows } = await clinicRows(t, orgA);
    await mine('/v1/calendars', { kind: 'room', name: 'A room', location_id: aRows.locations });
    await mine('/v1/automation-rules', {
      name: 'A rule',
      trigger: { type: 'event', event_type: 'appointment.created' },
      actions: [{ type: 'add_tag', tag: 'a' }],
    });
    squat = (await t.db.query<{ id: string }>(`select id from exercises where slug = 'squat' and organization_id is null`)).rows[0]!.id;
    const parents = new Set(
      [...DECLARED_REFERENCES.values()].flatMap((r) =>
        Object.entries(r)
          .filter(([k]) => k.startsWith(':'))
          .map(([, v]) => v),
      ),
    );
    for (const table of parents) {
      const { rows } = await t.db.query<{ id: string }>(`select id::text from ${table} where organization_id = $1 limit 1`, [orgA]);
      assert.ok(rows[0], `no ${table} row in the caller's clinic for the routes' path ids`);
      own[table] = rows[0].id;
    }
    const targets = new Set([...DECLARED_REFERENCES.values()].flatMap((r) => Object.values(r)));
    for (const target of targets) {
      const [table, column = 'id'] = target.split('?')[0]!.split('.');
      const { rows } = await t.db.query<{ id: string }>(`select ${column}::text as id from ${table} where organization_id = $1 limit 1`, [
        orgB,
      ]);
      if (rows[0]) foreign[target] = rows[0].id;
    }
  });
  after(async () => t?.close());

  let squat = '';
  /** What a route's own checks need besides the field under test (the routes whose service names every problem). */
  const base = (op: string, pattern: string): Record<string, unknown> => {
    if (op.includes('/v1/automation-rules')) {
      const trigger = pattern.startsWith('trigger.service_ids')
        ? { type: 'appointment_offset', offset_minutes: -60 }
        : pattern.startsWith('trigger.segment_id')
          ? { type: 'schedule', time: '09:00' }
          : { type: 'event', event_type: 'appointment.created' };
      const actions = pattern.includes('template_id')
        ? [{ type: pattern.includes('form_template') ? 'assign_form' : 'send_sms' }]
        : [{ type: 'add_tag', tag: 'x' }];
      return { name: 'Rule', trigger, actions };
    }
    if (op.includes('/v1/treatment-plans') && !op.includes('enrollments') && !op.includes('clone'))
      return { name: 'Plan', phases: [{ name: 'W1', days: [{ items: [{ exercise_id: squat, sets: [{ side: 'left', reps: 10 }] }] }] }] };
    return {};
  };

  const operations = () =>
    Object.entries<Schema>(spec.paths).flatMap(([path, methods]) =>
      Object.entries<Schema>(methods).map(([method, op]) => ({
        key: `${method.toUpperCase()} ${path}`,
        path,
        method: method.toUpperCase(),
        body: op.requestBody?.content?.['application/json']?.schema as Schema | undefined,
      })),
    );

  it('every uuid field of every request body is declared as a reference or exempted with a reason', () => {
    const undeclared: string[] = [];
    for (const op of operations()) {
      if (!op.body) continue;
      const fields = new Set<string>();
      uuidFields(spec, op.body, '', fields);
      const declared = DECLARED_REFERENCES.get(op.key) ?? {};
      for (const f of fields) if (!(f in declared) && !EXEMPT[`${op.key} ${f}`]) undeclared.push(`${op.key} ${f}`);
    }
    assert.deepEqual(undeclared, [], 'declare these in the route (config.references) or exempt them here with a reason');
    const stale = Object.keys(EXEMPT).filter((k) => {
      const [method, path, field] = k.split(' ');
      const op = spec.paths[path!]?.[method!.toLowerCase()];
      const fields = new Set<string>();
      if (op?.requestBody) uuidFields(spec, op.requestBody.content['application/json'].schema, '', fields);
      return !fields.has(field!);
    });
    assert.deepEqual(stale, [], 'exemptions of fields the API no longer has');
  });

  it("refuses another clinic's id in each declared field with 400 validation_error naming it", async () => {
    const wrong: string[] = [];
    let tried = 0;
    for (const op of operations()) {
      const declared = DECLARED_REFERENCES.get(op.key);
      if (!declared) continue;
      for (const [pattern, target] of Object.entries(declared)) {
        if (pattern.startsWith(':')) continue;
        const id = foreign[target];
        assert.ok(id, `no row of ${target} in the other clinic to try ${op.key} ${pattern} with`);
        const body = { ...(op.body ? (minimal(spec, op.body) as object) : {}), ...base(`${op.method} ${op.path}`, pattern) } as Record<
          string,
          unknown
        >;
        const field = setAt(spec, body, op.body ?? {}, pattern, id);
        const parent = declared[':id'];
        const url = op.path.replace(/\{[^}]+\}/g, (m) => (m === '{org_id}' ? orgA : m === '{id}' && parent ? own[parent]! : randomUUID()));
        const token = PATIENT_OPERATIONS.has(op.key) ? patientA : adminA;
        const res = await t.call(op.method, url, { token, org: orgA, body });
        tried++;
        const fields = res.statusCode === 400 ? res.json().error?.fields : undefined;
        // The field itself, or the list holding it (a module's own check may name `services` for services.0.service_id).
        const named = Object.keys(fields ?? {})
          .map((k) => k.replace(/\[(\d+)\]/g, '.$1'))
          .some((k) => k === field || field.startsWith(`${k}.`));
        if (res.json().error?.code !== 'validation_error' || !named)
          wrong.push(`${op.key} ${field}: ${res.statusCode} ${res.body.slice(0, 200)}`);
      }
    }
    assert.ok(tried >= 40, `only ${tried} fields tried`);
    assert.deepEqual(wrong, []);
  });
});
