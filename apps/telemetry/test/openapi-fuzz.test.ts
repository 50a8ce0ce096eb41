import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import {
  createIdPool,
  fuzzCaller,
  fuzzOperations,
  operationsOf,
  SEED,
  SOMETIMES_RAW_BODIES,
  validValueFor,
  valueFor,
  type FuzzCaller,
  type Operation,
  type Param,
  type Schema,
} from '../../core-api/test/support/openapi-fuzz.ts';
import { startWorld, type World } from './support.ts';

/**
 * The input fuzzer of the core API's tests (core-api/test/support/openapi-fuzz.ts) over every
 * operation of the telemetry service's /openapi.json, as a patient (portal token and organization),
 * a session (exercise-session token) and nobody, with real session ids in the paths. No answer may
 * be a 5xx, and every error answer is in the spec's envelope. Half the bodies are drawn within their
 * schema (validValueFor), so that media event batches reach the consent gate and the SQL. Pose batches are binary and not
 * generated (their decoder has its own tests); the route still gets the requests without a body.
 *
 * FUZZ_SEED=<n> runs another seed; FUZZ_DEBUG='POST /v1/media/events' prints every answer of matching operations.
 */
const RUNS_PER_OPERATION = 60;

describe('fuzzing every operation of the telemetry /openapi.json finds no 5xx', () => {
  let w: World;
  let spec: Schema;
  let callers: FuzzCaller[];
  const ids = createIdPool();
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
    spec = (await w.a.inject({ method: 'GET', url: '/openapi.json' })).json();
    const bearer = (name: string, token: string) =>
      fuzzCaller(name, () => ({ authorization: `Bearer ${token}`, 'x-organization-id': w.orgId }));
    callers = [bearer('patient', w.patient.token), bearer('session', own.token), fuzzCaller('nobody', () => ({}))];
  });
  after(() => w?.close());

  it('covers every operation (the description lists them all)', () => {
    const ops = operationsOf(spec).map((o) => `${o.method} ${o.path}`);
    for (const op of ['POST /v1/media/events', 'POST /v1/pose/frames', 'POST /v1/sessions/{id}/end', 'GET /health']) {
      assert.ok(ops.includes(op), `${op} is not in the description`);
    }
  });

  it('answers every generated request below 500, errors in the envelope', async () => {
    const { failures, reachedHandler } = await fuzzOperations({
      spec,
      operations: operationsOf(spec),
      callers,
      pathValue,
      // Half the bodies within the schema, so that batches reach the consent gate and the SQL.
      bodyValue: (op) => fc.oneof(valueFor(op.body, spec), validValueFor(op.body, spec)),
      rawBody: SOMETIMES_RAW_BODIES,
      inject: (req) => w.a.inject({ ...req, method: req.method as 'GET' }),
      onAnswer: (_op, _req, res) => {
        if (res.statusCode < 400) return;
        const error = JSON.parse(res.body)?.error;
        if (typeof error?.code !== 'string' || typeof error.message !== 'string')
          throw new Error(`${res.statusCode} outside the envelope: ${res.body.slice(0, 200)}`);
      },
      runs: RUNS_PER_OPERATION,
      seed: SEED,
    });
    assert.deepEqual(failures, [], `failures (FUZZ_SEED=${SEED}):\n${failures.join('\n')}`);
    // Worth something only past the edge: media event batches and session ends ran their handlers and SQL on generated input.
    for (const op of ['GET /health', 'POST /v1/media/events', 'POST /v1/sessions/{id}/end']) {
      assert.ok(reachedHandler.has(op), `${op} never answered a success: the generators no longer reach it`);
    }
  });
});
