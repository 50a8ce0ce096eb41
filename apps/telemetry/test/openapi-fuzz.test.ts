import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import {
  createIdPool,
  envelopeProblem,
  fuzzCaller,
  fuzzOperations,
  hostileCases,
  operationsOf,
  scopeHeaderCases,
  SEED,
  SOMETIMES_RAW_BODIES,
  validValueFor,
  valueFor,
  writeCounter,
  type FuzzCaller,
  type HostileCase,
  type Operation,
  type Param,
  type Schema,
} from '../../core-api/test/support/openapi-fuzz.ts';
import { uniqueEmail } from '../../core-api/test/helpers.ts';
import { startWorld, type World } from './support.ts';

/**
 * The input fuzzer of the core API's tests (core-api/test/support/openapi-fuzz.ts) over every
 * operation of the telemetry service's /openapi.json, as a patient (portal token and organization),
 * a session (exercise-session token) and nobody, with real session ids in the paths. Each operation
 * first gets the enumerated hostile cases of hostileCases (path, body fields, content types, 10,000
 * levels of JSON, X-Organization-ID / X-Patient-ID naming another clinic, another clinic's session
 * id), then generated requests. No answer may be a 5xx, every error answer is in the spec's envelope,
 * a refused write changes no row (writeCounter), and every operation of the description is fuzzed. Half the bodies are drawn within their
 * schema (validValueFor), so that media event batches reach the consent gate and the SQL. Pose batches are binary and not
 * generated (their decoder has its own tests); the route still gets the requests without a body.
 *
 * FUZZ_SEED=<n> runs another seed; FUZZ_DEBUG='POST /v1/media/events' prints every answer of matching operations.
 */
const RUNS_PER_OPERATION = 40;

describe('fuzzing every operation of the telemetry /openapi.json finds no 5xx', () => {
  let w: World;
  let spec: Schema;
  let callers: FuzzCaller[];
  const ids = createIdPool();
  let headerCases: HostileCase[] = [];
  let otherSession = '';
  /** A path parameter: mostly a real session id (the caller's own, or another one), sometimes anything. */
  const pathValue = (op: Operation, p: Param): fc.Arbitrary<unknown> =>
    fc.oneof({ weight: 3, arbitrary: ids.idFor(op) }, { weight: 1, arbitrary: valueFor(p.schema, spec) });

  before(async () => {
    w = await startWorld();
    await w.grant('analytics');
    await w.grant('biometric');
    const own = await w.start();
    const other = await w.start();
    ids.all.push(own.id, other.id);
    // Another clinic with its own patient and exercise session: its ids are real, and never the caller's.
    const b = await w.t.createOrg();
    const theirs = await w.t.addPatient(b.id, uniqueEmail('other-patient'));
    await w.grant('analytics', theirs.token, b.id);
    await w.grant('biometric', theirs.token, b.id);
    otherSession = (await w.start(theirs.token, 'squat', b.id)).id;
    const patientIds = async (org: string) =>
      (await w.t.db.query<{ id: string }>('select id from patients where organization_id = $1 order by id', [org])).rows.map((r) => r.id);
    const [ownPatient] = await patientIds(w.orgId);
    const [otherPatient] = await patientIds(b.id);
    spec = (await w.a.inject({ method: 'GET', url: '/openapi.json' })).json();
    const bearer = (name: string, token: string) =>
      fuzzCaller(name, () => ({ authorization: `Bearer ${token}`, 'x-organization-id': w.orgId }));
    const patient = bearer('patient', w.patient.token);
    callers = [patient, bearer('session', own.token), fuzzCaller('nobody', () => ({}))];
    headerCases = scopeHeaderCases({ patient, orgId: w.orgId, otherOrgId: b.id, ownPatientId: ownPatient!, otherPatientId: otherPatient! });
  });
  after(() => w?.close());

  it('covers every operation (the description lists them all)', () => {
    const ops = operationsOf(spec).map((o) => `${o.method} ${o.path}`);
    for (const op of ['POST /v1/media/events', 'POST /v1/pose/frames', 'POST /v1/sessions/{id}/end', 'GET /health']) {
      assert.ok(ops.includes(op), `${op} is not in the description`);
    }
  });

  it('answers every enumerated and generated request below 500, errors in the envelope, nothing changed on refusal', async () => {
    // Tables written whatever the answer: users.last_activity (spec 2.3), the audit trail, the jobs runner's queue.
    const state = await writeCounter(w.t.db, ['audit_logs', 'audit_chain_heads', 'users', 'jobs']);
    const started = Date.now();
    const { failures, reachedHandler, fuzzed, requests } = await fuzzOperations({
      spec,
      operations: operationsOf(spec),
      callers,
      pathValue,
      // Half the bodies within the schema, so that batches reach the consent gate and the SQL.
      bodyValue: (op) => fc.oneof(valueFor(op.body, spec), validValueFor(op.body, spec)),
      rawBody: SOMETIMES_RAW_BODIES,
      cases: (op) =>
        hostileCases(op, {
          spec,
          pathValue: () => ids.all[0]!,
          foreignPathIds: () => [otherSession],
          ownIds: {},
          foreignIds: { sessions: otherSession, exercise_sessions: otherSession },
          headerCases,
        }),
      plainPath: () => ids.all[0]!,
      state,
      inject: (req) => w.a.inject({ ...req, method: req.method as 'GET' }),
      onAnswer: (_op, _req, res) => {
        const problem = envelopeProblem(res);
        if (problem) throw new Error(problem);
      },
      runs: RUNS_PER_OPERATION,
      seed: SEED,
    });
    // The number the closing note of issue 29 reports.
    console.log(`# telemetry fuzz: ${requests} requests over ${fuzzed.size} operations in ${Math.round((Date.now() - started) / 1000)} s`);
    assert.deepEqual(failures, [], `failures (FUZZ_SEED=${SEED}):\n${failures.join('\n')}`);
    // The write counter saw the accepted writes, so its silence on refusals means something.
    assert.ok(Object.keys(await state()).length > 0, 'the write counter saw no write at all');
    const missed = operationsOf(spec)
      .map((o) => `${o.method} ${o.path}`)
      .filter((k) => !fuzzed.has(k));
    assert.deepEqual(missed, [], 'operations the fuzzer did not reach');
    // Worth something only past the edge: media event batches and session ends ran their handlers and SQL on generated input.
    for (const op of ['GET /health', 'POST /v1/media/events', 'POST /v1/sessions/{id}/end']) {
      assert.ok(reachedHandler.has(op), `${op} never answered a success: the generators no longer reach it`);
    }
  });
});
