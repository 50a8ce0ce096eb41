import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { startTestApp, uniqueEmail, type TestApp } from './helpers.ts';
import {
  createIdPool,
  fuzzCaller,
  fuzzOperations,
  MOSTLY_RAW_BODIES,
  operationsOf,
  SEED,
  valueFor,
  type FuzzCaller,
  type Operation,
  type Param,
  type Schema,
} from './support/openapi-fuzz.ts';

/**
 * The input fuzzer of support/openapi-fuzz.ts over every operation of the core API's /openapi.json,
 * as a superadmin, a clinic admin and a patient, with real fixture ids by resource. No answer may be
 * a 5xx.
 *
 * FUZZ_SEED=<n> runs another seed; FUZZ_DEBUG='GET /v1/patients' prints every answer of matching operations.
 */
const RUNS_PER_OPERATION = 15;

describe('fuzzing every operation of /openapi.json finds no 5xx', () => {
  let t: TestApp;
  let spec: Schema;
  let callers: FuzzCaller[];
  /** Ids the API has handed out: the fixtures', then every id a 2xx answer carries. */
  const ids = createIdPool();
  let orgId = '';
  /** A path parameter: the organization where the path names one, else an id the API handed out, sometimes anything. */
  const pathValue = (op: Operation, p: Param, index: number): fc.Arbitrary<unknown> => {
    const namesOrg = p.name === 'org_id' || (index === 0 && p.name === 'id' && op.path.startsWith('/v1/organizations/'));
    return fc.oneof(
      { weight: 3, arbitrary: namesOrg ? fc.constant(orgId) : ids.idFor(op) },
      { weight: 1, arbitrary: valueFor(p.schema, spec) },
    );
  };

  before(async () => {
    // Limits high enough that the fuzzer meets the routes, not the rate limiter (which has its own tests).
    t = await startTestApp({
      env: {
        RATELIMIT_API_LIMIT: '1000000',
        RATELIMIT_PUBLIC_RESOLVE_LIMIT: '1000000',
        RATELIMIT_PUBLIC_LIMIT: '1000000',
        BREAK_GLASS_RATE_LIMIT: '1000000',
        RATELIMIT_HOLDS_PER_IP: '1000000',
        RATELIMIT_HOLDS_PER_ORG: '1000000',
      },
    });
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    spec = res.json();
    const su = await t.superadmin();
    const org = await t.createOrg();
    const admin = await t.addMember(org.id, uniqueEmail('fuzz-admin'), 'admin');
    const patient = await t.addPatient(org.id, uniqueEmail('fuzz-patient'));
    await t.breakGlass(su, org.id);
    const caller = (name: string, token: string) =>
      fuzzCaller(name, () => ({ authorization: `Bearer ${token}`, 'x-organization-id': org.id }));
    callers = [caller('superadmin', su), caller('admin', admin.token), caller('patient', patient.token)];
    orgId = org.id;
    ids.all.push(org.id, admin.userId, patient.userId);
    // One of each resource the routes act on, made through the API, so that generated requests
    // reach versions, rollbacks, forms and files instead of stopping at 404.
    const make = async (url: string, body: unknown) => {
      const res = await t.call('POST', url, { token: su, org: org.id, body });
      assert.ok(res.statusCode < 300, `fixture ${url}: ${res.statusCode} ${res.body}`);
      ids.harvest(res.body, url);
      return res.json().data;
    };
    const patientRow = (await t.db.query<{ id: string }>('select id from patients where user_id = $1', [patient.userId])).rows[0]!;
    ids.all.push(patientRow.id);
    const field = await make('/v1/custom-fields', { entity_type: 'form', key: 'fuzz_note', label: 'Note', field_type: 'text' });
    const template = await make('/v1/form-templates', { name: 'Fuzz', fields: [{ custom_field_id: field.id }] });
    await make('/v1/forms', { form_template_id: template.id, patient_id: patientRow.id });
    const site = await make(`/v1/organizations/${org.id}/locations`, { name: 'Fuzz room', timezone: 'Europe/Bucharest' });
    // Scheduling: a bookable specialist with availability, a public service, a room calendar, an
    // appointment and a hold, so that generated requests reach the booking handlers and their SQL.
    const specialist = await make('/v1/specialists', {
      user_id: admin.userId,
      display_name: 'Dr Fuzz',
      bookable_online: true,
      location_ids: [site.id],
    });
    const availability = await t.call('PUT', `/v1/specialists/${specialist.id}/availability`, {
      token: su,
      org: org.id,
      body: { rules: [1, 2, 3, 4, 5, 6, 7].map((weekday) => ({ location_id: site.id, weekday, start: '08:00', end: '18:00' })) },
    });
    assert.equal(availability.statusCode, 200, availability.body);
    const service = await make('/v1/services', {
      name: 'Fuzz visit',
      duration_minutes: 30,
      price_minor: 1000,
      currency: 'RON',
      mode: 'in_person',
      is_public: true,
      location_ids: [site.id],
      specialist_ids: [specialist.id],
    });
    await make('/v1/calendars', { kind: 'room', name: 'Fuzz room', location_id: site.id });
    const day = new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10);
    const free = await t.call('GET', `/v1/public/availability?organization=${org.id}&service_id=${service.id}&from=${day}&to=${day}`);
    const slots = free.json().data.slots as { start: string }[];
    const [first, second] = [slots[0], slots.at(-1)];
    await make('/v1/appointments', {
      service_id: service.id,
      specialist_id: specialist.id,
      start: first!.start,
      patient_id: patientRow.id,
    });
    await make('/v1/public/holds', { organization: org.id, service_id: service.id, specialist_id: specialist.id, start: second!.start });
  });
  after(() => t?.close());

  it('covers every operation (the description lists them all)', () => {
    assert.ok(operationsOf(spec).length >= 100, 'the fuzzer found fewer operations than the API has');
  });

  it('answers every generated request below 500', async () => {
    // Two passes: the first harvests ids from what it created, so the second reaches more handlers.
    // Operations that take things away (deletions, erasure, leaving) go last in each pass, so that
    // the fixtures live long enough for the rest to get past the permission checks.
    const destructive = (op: Operation) => op.method === 'DELETE' || /\/(erase|restrict|leave)$/.test(op.path);
    const ordered = [...operationsOf(spec).filter((o) => !destructive(o)), ...operationsOf(spec).filter(destructive)];
    const { failures, reachedHandler } = await fuzzOperations({
      spec,
      operations: [...ordered, ...ordered],
      callers,
      pathValue,
      rawBody: MOSTLY_RAW_BODIES,
      inject: (req) => t.app.inject({ ...req, method: req.method as 'GET' }),
      onAnswer: (_op, { url }, res) => {
        if (res.statusCode < 300) ids.harvest(res.body, url);
      },
      runs: RUNS_PER_OPERATION,
      seed: SEED,
    });
    assert.deepEqual(failures, [], `5xx answers (FUZZ_SEED=${SEED}):\n${failures.join('\n')}`);
    // The fuzzer is worth something only if it gets past validation: most operations must have
    // answered a success at least once, so their handlers and SQL ran on generated input.
    const ops = operationsOf(spec);
    assert.ok(
      reachedHandler.size >= 25,
      `only ${reachedHandler.size} of ${ops.length} operations answered a success: the generators no longer fit the API`,
    );
  });
});
