import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';
import { clinicRows } from './support/clinic-rows.ts';
import {
  createIdPool,
  envelopeProblem,
  fuzzCaller,
  fuzzOperations,
  hostileCases,
  MOSTLY_RAW_BODIES,
  operationsOf,
  plainValueFor,
  scopeHeaderCases,
  SEED,
  writeCounter,
  valueFor,
  type FuzzCaller,
  type HostileCase,
  type Operation,
  type Param,
  type Schema,
} from './support/openapi-fuzz.ts';

/**
 * The input fuzzer of support/openapi-fuzz.ts over every operation of the core API's /openapi.json,
 * with two clinics' real rows present (support/clinic-rows.ts: patients, appointments, forms,
 * documents, plans, ...). Each operation gets its enumerated hostile cases (each path parameter,
 * query parameter and body field in turn: NUL, lone surrogates, 1e308, 2^63, wrong types, over-long
 * text, 10,000 levels of JSON, the other clinic's real ids; X-Organization-ID and X-Patient-ID
 * malformed or naming the other clinic; hostile Idempotency-Keys; wrong content types) as clinic A's
 * admin, then generated requests as a superadmin, that admin and a patient. No answer may be a 5xx,
 * every refusal is in the error envelope, and a refused write changes no row of any table
 * (writeCounter). The test fails when the description has an operation it did not fuzz.
 *
 * FUZZ_SEED=<n> runs another seed; FUZZ_DEBUG='GET /v1/patients' prints every answer of matching operations.
 */
const RUNS_PER_OPERATION = 4;
/**
 * Tables written whatever the answer: the audit trail and its chain record refusals (spec 4.5),
 * users.last_activity is recorded for every signed-in request (spec 2.3), and the in-process runner
 * advances the jobs queue (GDPR exports) in the background while requests run.
 */
const WRITTEN_ANYWAY = ['audit_logs', 'audit_chain_heads', 'users', 'jobs'];

describe('fuzzing every operation of /openapi.json finds no 5xx and no change on refusal', () => {
  let t: TestApp;
  let spec: Schema;
  let callers: FuzzCaller[];
  let headerCases: HostileCase[] = [];
  /** Ids the API has handed out in clinic A (the fixtures', then every id a 2xx answer carries) and clinic B's. */
  const ids = createIdPool();
  const foreign = createIdPool();
  let own: Record<string, string> = {};
  let other: Record<string, string> = {};
  let orgId = '';
  let otherOrgId = '';
  const namesOrg = (op: Operation, p: Param) =>
    p.name === 'org_id' ||
    (p.name === 'id' && /^\/v1\/organizations\/\{id\}/.test(op.path) && op.path.indexOf('{') === op.path.indexOf('{id}'));
  /** A path parameter: the organization where the path names one, else an id the API handed out, sometimes anything. */
  const pathValue = (op: Operation, p: Param): fc.Arbitrary<unknown> =>
    fc.oneof(
      { weight: 3, arbitrary: namesOrg(op, p) ? fc.constant(orgId) : ids.idFor(op) },
      { weight: 1, arbitrary: valueFor(p.schema, spec) },
    );
  /** The lawful value of a path parameter in the enumerated cases: clinic A's row of that resource. */
  const plainPath = (op: Operation, p: Param): string => {
    if (namesOrg(op, p)) return orgId;
    if (p.schema.format === 'uuid' || p.schema.type === undefined) return ids.idsFor(op)[0] ?? ids.all[0]!;
    return String(plainValueFor(p.schema, spec));
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
    spec = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const su = await t.superadmin();
    const [a, b] = [await t.createOrg(), await t.createOrg()];
    [orgId, otherOrgId] = [a.id, b.id];
    // Two clinics with one row of each kind, and a document of each clinic's form.
    const mine = await clinicRows(t, a.id);
    const theirs = await clinicRows(t, b.id);
    for (const [org, c] of [
      [a.id, mine],
      [b.id, theirs],
    ] as const) {
      const doc = dataOf(
        await t.call('POST', `/v1/forms/${c.rows.forms}/render`, {
          token: c.admin.token,
          org,
          body: { pdf_template_id: c.rows.pdf_templates },
        }),
        201,
      );
      c.rows.documents = doc.id;
    }
    // The subscriptions' receiver refuses at once (loopback), so that test deliveries do not wait on DNS.
    await t.db.query(`update webhook_subscriptions set url = 'https://127.0.0.1:9/h'`);
    own = mine.rows;
    other = theirs.rows;
    const patient = await t.addPatient(a.id, uniqueEmail('fuzz-patient'));
    await t.breakGlass(su, a.id);
    const caller = (name: string, token: string, org = a.id) =>
      fuzzCaller(name, () => ({ authorization: `Bearer ${token}`, 'x-organization-id': org }));
    const admin = caller('admin', mine.admin.token);
    const patientCaller = caller('patient', patient.token);
    callers = [admin, caller('superadmin', su), patientCaller];
    ids.all.push(a.id, mine.admin.userId, patient.userId, ...Object.values(own));
    foreign.all.push(b.id, ...Object.values(other));
    // Ids by resource: what every list answers in each clinic, so that a path parameter gets its own
    // resource's row (A's for the plain request, B's for "another clinic's id").
    for (const op of operationsOf(spec).filter((o) => o.method === 'GET' && !o.path.includes('{'))) {
      for (const [pool, c, org] of [
        [ids, mine, a.id],
        [foreign, theirs, b.id],
      ] as const) {
        const res = await t.call('GET', op.path, { token: c.admin.token, org });
        if (res.statusCode === 200) pool.harvest(res.body, op.path);
      }
    }
    headerCases = scopeHeaderCases({
      staff: admin,
      patient: patientCaller,
      orgId: a.id,
      otherOrgId: b.id,
      ownPatientId: own.patients!,
      otherPatientId: other.patients!,
    });
  });
  after(() => t?.close());

  it('fuzzes every operation of the description, makes no 5xx and changes nothing on refusal', async () => {
    // Operations that take things away (deletions, erasure, leaving) go last, so that the fixtures
    // live long enough for the rest to get past the permission checks.
    const destructive = (op: Operation) => op.method === 'DELETE' || /\/(erase|restrict|leave)$/.test(op.path);
    const ops = operationsOf(spec);
    const ordered = [...ops.filter((o) => !destructive(o)), ...ops.filter(destructive)];
    const state = await writeCounter(t.db, WRITTEN_ANYWAY);
    const started = Date.now();
    const result = await fuzzOperations({
      spec,
      operations: ordered,
      callers,
      pathValue,
      plainPath,
      cases: (op) =>
        hostileCases(op, {
          spec,
          pathValue: plainPath,
          foreignPathIds: (o, p) => (namesOrg(o, p) ? [otherOrgId] : foreign.idsFor(o)),
          ownIds: own,
          foreignIds: other,
          headerCases,
        }),
      state,
      rawBody: MOSTLY_RAW_BODIES,
      inject: (req) => t.app.inject({ ...req, method: req.method as 'GET' }),
      onAnswer: (_op, { url }, res) => {
        if (res.statusCode < 300) ids.harvest(res.body, url);
        const problem = envelopeProblem(res);
        if (problem) throw new Error(problem);
      },
      runs: RUNS_PER_OPERATION,
      seed: SEED,
    });
    const { failures, reachedHandler, fuzzed, requests } = result;
    // The number the closing note of issue 29 reports.
    console.log(`# core API fuzz: ${requests} requests over ${fuzzed.size} operations in ${Math.round((Date.now() - started) / 1000)} s`);
    assert.deepEqual(failures, [], `failures (FUZZ_SEED=${SEED}):\n${failures.join('\n')}`);
    // The write counter saw the accepted writes, so its silence on refusals means something.
    assert.ok(Object.keys(await state()).length > 0, 'the write counter saw no write at all');
    // Every operation of the description was fuzzed: a new route cannot escape.
    const missed = ops.map((o) => `${o.method} ${o.path}`).filter((k) => !fuzzed.has(k));
    assert.deepEqual(missed, [], 'operations the fuzzer did not reach');
    assert.ok(ops.length >= 100, 'the fuzzer found fewer operations than the API has');
    // The fuzzer is worth something only if it gets past validation: most operations must have
    // answered a success at least once, so their handlers and SQL ran on generated input.
    assert.ok(
      reachedHandler.size >= 25,
      `only ${reachedHandler.size} of ${ops.length} operations answered a success: the generators no longer fit the API`,
    );
  });
});
