import { DataOf, ErrorResponse, errors, Timestamp, Uuid, nullable } from '@clinic/http-kit';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Runtime } from '../../platform/runtime.ts';
import { requireConsent } from '../../platform/gates.ts';
import { hasPermission } from '../../platform/identity/context.ts';
import { getSession, replayOf, startSession } from './service.ts';
import { sessionSigner } from './token.ts';
import { actorOf, routesOf } from '../../platform/route.ts';
import { replayKeyById } from './queries.ts';

const errs = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 429: ErrorResponse };
const tags = ['exercise-sessions'];

const Session = Type.Object({
  id: Uuid,
  organization_id: Uuid,
  patient_user_id: Uuid,
  exercise_id: Uuid,
  status: Type.String({ description: 'active, ending, completed or incomplete' }),
  end_reason: nullable(Type.String()),
  started_at: Timestamp,
  ended_at: nullable(Timestamp),
  batches_received: Type.Integer(),
  frames_received: Type.Integer(),
  replay_available: Type.Boolean(),
});
const Started = Type.Object({ ...Session.properties, session_token: Type.String(), session_token_expires_at: Timestamp });
const WithMetrics = Type.Object({ ...Session.properties, metrics: nullable(Type.Record(Type.String(), Type.Unknown())) });

/** Patients of the organization in scope may start sessions for themselves (spec 5.7, 5.8). */
async function requirePatient(request: FastifyRequest): Promise<void> {
  if (!request.ctx) throw errors.unauthorized();
  if (!request.ctx.isPatient) throw errors.forbidden('Exercise sessions are started by patients of the organization, for themselves.');
}

/** Reading: a patient (ownership decides the row), or staff with telemetry.view_org, or a superadmin. */
async function requireReader(request: FastifyRequest): Promise<void> {
  const ctx = request.ctx;
  if (!ctx) throw errors.unauthorized();
  if (!(ctx.isPatient || hasPermission(ctx, 'telemetry.view_org')))
    throw errors.forbidden('This needs the telemetry.view_org permission in the organization.');
}

export function exerciseSessionRoutes(app: FastifyInstance, rt: Runtime): void {
  const r = routesOf(app, { tags, errors: errs });
  // Public routes (no token, config.public): not under the module's bearer security and error set.
  const open = app.withTypeProvider<TypeBoxTypeProvider>();
  const signer = () => sessionSigner(rt.config);

  r.post(
    '/v1/exercise-sessions',
    {
      config: { references: { exercise_id: 'exercises?shared' }, idempotent: true },
      onRequest: [requirePatient, requireConsent('biometric')],
      schema: {
        operationId: 'startExerciseSession',
        summary: 'Start a pose session for the calling patient; returns a signed session token for the telemetry service',
        description:
          'The patient of the organization in scope (X-Organization-ID) with an active biometric consent (else 403 consent_required). The token (EdDSA JWT, docs/telemetry.md) authenticates POST /v1/pose/frames and POST /v1/sessions/{id}/end.',
        body: Type.Object({ exercise_id: Uuid }, { additionalProperties: false }),
        response: { 201: DataOf(Started) },
      },
    },
    async (request, reply) => {
      const s = await signer();
      const data = await request.inTx((tx) => startSession(tx, actorOf(request), s, request.body.exercise_id));
      return reply.status(201).send({ data });
    },
  );

  r.get(
    '/v1/exercise-sessions/:id',
    {
      onRequest: [requireReader],
      schema: {
        operationId: 'getExerciseSession',
        summary: 'An exercise session and its aggregates (rep count, ROM, form score, reps)',
        description:
          'The patient who owns it, or staff with telemetry.view_org at its organization. `metrics` is null until the session has ended and been processed.',
        params: Type.Object({ id: Uuid }),
        response: { 200: DataOf(WithMetrics) },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => getSession(tx, request.params.id)) }),
  );

  r.get(
    '/v1/exercise-sessions/:id/replay',
    {
      onRequest: [requireReader],
      schema: {
        operationId: 'getExerciseSessionReplay',
        summary: "An expiring signed URL to the session's replay blob (gzip pose batches)",
        params: Type.Object({ id: Uuid }),
        response: { 200: DataOf(Type.Object({ url: Type.String(), expires_at: Timestamp })) },
      },
    },
    async (request) => {
      const id = await request.inTx((tx) => replayOf(tx, request.params.id));
      const { token, expiresAt } = await (await signer()).signReplay(id);
      return { data: { url: `${rt.config.publicUrl}/v1/public/telemetry/replays/${id}?token=${token}`, expires_at: expiresAt } };
    },
  );

  open.get(
    '/v1/public/telemetry/jwks.json',
    {
      config: { public: true },
      schema: {
        operationId: 'getTelemetryJwks',
        tags,
        summary: 'Public keys that verify exercise-session tokens (for the telemetry service)',
        response: { 200: Type.Object({ keys: Type.Array(Type.Record(Type.String(), Type.Unknown())) }) },
      },
    },
    async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=300');
      return (await signer()).jwks;
    },
  );

  // The signed URL itself: no bearer token, the signature is the credential (like a pre-signed S3 URL).
  open.get(
    '/v1/public/telemetry/replays/:id',
    {
      config: { public: true },
      schema: { hide: true, params: Type.Object({ id: Uuid }), querystring: Type.Object({ token: Type.String({ maxLength: 2000 }) }) },
    },
    async (request, reply) => {
      const sid = await (await signer()).verifyReplay(request.query.token);
      if (sid !== request.params.id) throw errors.forbidden('This link is invalid or has expired; ask for a new one.');
      const key = await replayKeyOf(rt, sid);
      const stream = key ? await rt.assets.get(key) : null;
      if (!stream) throw errors.notFound('The replay is no longer available.');
      return reply.header('content-type', 'application/gzip').header('cache-control', 'private, no-store').send(stream);
    },
  );
}

/** The replay key of a session, read as the owner: the signed token already proved access (spec 5.3: one row, one column). */
function replayKeyOf(rt: Runtime, sessionId: string): Promise<string | null> {
  return replayKeyById(rt.db, sessionId);
}
