import {
  AppError,
  bearerToken,
  createRateLimiter,
  DataOf,
  ErrorResponse,
  errors,
  rateLimitHeaders,
  Uuid,
  type TokenVerifier,
  isUuid,
} from '@clinic/http-kit';
import type { Redis } from 'ioredis';
import type { Database } from '@clinic/db';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { asTelemetry, ingestPose } from '../db.ts';
import { finalizeSession, type FinalizeDeps } from '../finalize.ts';
import { gateError } from '../gate.ts';
import { decodeBatch, gunzipBatch, PoseFormatError } from '../pose/format.ts';
import type { SessionClaims, SessionTokenVerifier } from '../tokens.ts';
import { MediaEventsBody } from './media-schema.ts';
import * as q from '../queries.ts';

export interface IngestDeps extends FinalizeDeps {
  db: Database;
  sessionTokens: SessionTokenVerifier;
  /** The identity provider's verifier (the patient portal's own bearer token, for media events). */
  userTokens: TokenVerifier;
  poseBodyLimit: number;
  /** Pose batches per session per window (one a second is normal; the margin covers a client catching up). */
  poseRateLimit: { limit: number; windowSeconds: number };
  /** Shared counters across instances when present; in-process otherwise. */
  redis?: Redis | null;
  /** REDIS_KEY_PREFIX: what every Redis key of this deployment starts with (several deployments may share one Redis). */
  redisKeyPrefix?: string;
}

const errs = {
  400: ErrorResponse,
  401: ErrorResponse,
  403: ErrorResponse,
  404: ErrorResponse,
  409: ErrorResponse,
  413: ErrorResponse,
  415: ErrorResponse,
  429: ErrorResponse,
};

async function sessionCaller(deps: IngestDeps, request: FastifyRequest): Promise<SessionClaims> {
  const raw = bearerToken(request.headers.authorization);
  if (!raw) throw errors.unauthorized('An exercise-session token is required: send Authorization: Bearer <session_token>.');
  return deps.sessionTokens.verify(raw);
}

function refuse(status: string, purpose: 'analytics' | 'biometric'): never {
  const err = gateError(status, purpose);
  throw err ?? new Error('refuse called with ok');
}

const EndedSchema = Type.Object({
  session_id: Uuid,
  status: Type.String(),
  replay_available: Type.Boolean(),
  result: Type.Unknown({ description: 'rep_count, form_score, rom, reps, algorithm_version (docs/telemetry.md); null without frames' }),
});

export function ingestRoutes(app: FastifyInstance, deps: IngestDeps): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  // Per session, so one runaway or hostile device cannot flood the table; counted before decoding, so
  // garbage counts too.
  const poseLimiter = createRateLimiter({
    redis: deps.redis ?? null,
    keyPrefix: `${deps.redisKeyPrefix ?? ''}telemetry:pose:`,
    points: deps.poseRateLimit.limit,
    durationSeconds: deps.poseRateLimit.windowSeconds,
  });
  // Pose batches are binary (docs/telemetry.md): only this route takes them, with its own size limit. Its
  // parser lives in a scope of its own, so the other routes answer 415 to a binary body.
  app.register(async (scope) => {
    const pose = scope.withTypeProvider<TypeBoxTypeProvider>();
    scope.addContentTypeParser('application/octet-stream', { parseAs: 'buffer', bodyLimit: deps.poseBodyLimit }, (_req, body, done) =>
      done(null, body),
    );
    pose.post(
      '/v1/pose/frames',
      {
        bodyLimit: deps.poseBodyLimit,
        schema: {
          operationId: 'ingestPoseFrames',
          summary: 'One pose batch (gzip, binary format of docs/telemetry.md); session token',
          response: {
            200: DataOf(Type.Object({ session_id: Uuid, seq: Type.Integer(), duplicate: Type.Boolean() })),
            201: DataOf(Type.Object({ session_id: Uuid, seq: Type.Integer(), duplicate: Type.Boolean() })),
            ...errs,
          },
        },
      },
      async (request, reply) => {
        const claims = await sessionCaller(deps, request);
        if (!Buffer.isBuffer(request.body))
          throw new AppError(415, 'unsupported_media_type', 'Send the batch as Content-Type: application/octet-stream.');
        const limit = await poseLimiter.consume(claims.sessionId);
        reply.headers(rateLimitHeaders(limit));
        if (!limit.allowed) throw errors.rateLimited(limit.resetSeconds);
        let batch: ReturnType<typeof decodeBatch>;
        try {
          batch = decodeBatch(gunzipBatch(request.body));
        } catch (err) {
          if (err instanceof PoseFormatError) throw errors.validation({ body: err.message }, `Invalid pose batch: ${err.message}.`);
          throw err;
        }
        const n = batch.timestamps.length;
        const s = await ingestPose(deps.db, {
          sessionId: claims.sessionId,
          userId: claims.userId,
          orgId: claims.orgId,
          seq: batch.seq,
          frames: n,
          tFirst: batch.timestamps[0]!,
          tLast: batch.timestamps[n - 1]!,
          payload: request.body,
        });
        if (s !== 'stored' && s !== 'duplicate') refuse(s, 'biometric');
        return reply
          .status(s === 'stored' ? 201 : 200)
          .send({ data: { session_id: claims.sessionId, seq: batch.seq, duplicate: s === 'duplicate' } });
      },
    );
  });

  r.post(
    '/v1/sessions/:id/end',
    {
      schema: {
        operationId: 'endExerciseSession',
        summary: 'Ends a pose session: rep count, range of motion, form score; idempotent; session token',
        params: Type.Object({ id: Uuid }),
        response: { 200: DataOf(EndedSchema), ...errs },
      },
    },
    async (request) => {
      const claims = await sessionCaller(deps, request);
      if (claims.sessionId !== request.params.id.toLowerCase()) throw errors.forbidden('This session token belongs to another session.');
      const out = await finalizeSession(
        deps,
        claims.sessionId,
        { userId: claims.userId, orgId: claims.orgId },
        { status: 'completed', reason: 'session_end' },
      );
      return { data: out };
    },
  );

  r.post(
    '/v1/media/events',
    {
      schema: {
        operationId: 'ingestMediaEvents',
        summary: 'Exercise-video engagement events (spec 4.11); the patient portal bearer token and X-Organization-ID',
        body: MediaEventsBody,
        response: { 200: DataOf(Type.Object({ media_session_id: Uuid, accepted: Type.Integer(), duplicates: Type.Integer() })), ...errs },
      },
    },
    async (request) => {
      const raw = bearerToken(request.headers.authorization);
      if (!raw) throw errors.unauthorized();
      const token = await deps.userTokens.verify(raw);
      const org = request.headers['x-organization-id'];
      if (!isUuid(org))
        throw errors.validation({ 'X-Organization-ID': 'must be the uuid of the organization' }, 'X-Organization-ID is required.');
      const body = request.body;
      const seqs = new Set(body.events.map((e) => e.seq));
      if (seqs.size !== body.events.length) throw errors.validation({ events: 'seq values must be unique within a batch' });
      const result = await asTelemetry(deps.db, async (tx) => {
        const userId = await q.userBySubject(tx, token.subject);
        // Not provisioned yet: the person has never used the core API, so it is no one's patient.
        if (!userId) return { status: 'not_patient', accepted: 0 };
        return q.ingestMedia(
          tx,
          userId,
          org.toLowerCase(),
          body.media_session_id,
          body.exercise_id ?? null,
          body.video_id ?? null,
          body.events,
        );
      });
      if (result.status !== 'ok') refuse(result.status, 'analytics');
      return {
        data: { media_session_id: body.media_session_id, accepted: result.accepted, duplicates: body.events.length - result.accepted },
      };
    },
  );
}
