import { DataOf, ErrorResponse, errors, ListOf, ListQueryWith, Uuid } from '@clinic/http-kit';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { requirePermission } from '../../platform/gates.ts';
import type { Runtime } from '../../platform/runtime.ts';
import { CreateExerciseBody, Exercise, PropagateBody, Propagation, SetStatusBody, UpdateExerciseBody } from './schemas.ts';
import {
  bumpAssetVersion,
  changeStatus,
  createExercise,
  deleteExercise,
  getExercise,
  listExercises,
  propagateExercise,
  updateExercise,
} from './service.ts';
import { actorOf, contextOf, routesOf } from '../../platform/route.ts';
import { requireSuperadmin } from '../../platform/gates.ts';

const errs = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 429: ErrorResponse };
const tags = ['exercises'];

/** A minimal exercise library (spec 2.12, 3.5): the platform's and the organization's exercises. */
export function exerciseRoutes(app: FastifyInstance, rt: Runtime): void {
  void rt;
  const r = routesOf(app, { tags: tags, errors: errs });

  r.post(
    '/v1/exercises',
    {
      config: { idempotent: true },
      onRequest: [requirePermission('exercises.manage_org')],
      schema: {
        operationId: 'createExercise',
        summary: 'Add an exercise to the library of the organization in scope (X-Organization-ID), or to the platform library',
        description:
          'Needs exercises.manage_org. Starts as draft. 409 slug_taken. `movement` makes it scorable by telemetry. `platform: true` (superadmins only) adds it to the platform library, which every organization reads once it is published.',
        body: CreateExerciseBody,
        response: { 201: DataOf(Exercise) },
      },
    },
    async (request, reply) => {
      const { platform, ...body } = request.body;
      const ctx = contextOf(request);
      if (platform && !ctx.isSuperadmin) throw errors.forbidden('Only platform superadmins add exercises to the platform library.');
      const orgId = platform ? null : ctx.orgId;
      if (!platform && !orgId) throw errors.forbidden('Name the organization with X-Organization-ID.');
      const row = await request.inTx((tx) => createExercise(tx, actorOf(request), orgId, body));
      return reply.status(201).send({ data: row });
    },
  );

  r.get(
    '/v1/exercises',
    {
      schema: {
        operationId: 'listExercises',
        summary: 'Exercises visible to the caller: the platform library and the organization in scope',
        description:
          'Patients see published ones; staff also drafts and archived ones of their organization. Filters status, kind; sort name, slug, created_at.',
        querystring: ListQueryWith({ status: Type.Optional(Type.String()), kind: Type.Optional(Type.String()) }),
        response: { 200: ListOf(Exercise), 422: ErrorResponse },
      },
    },
    async (request) => request.inTx((tx) => listExercises(tx, contextOf(request).orgId, request.query as Record<string, unknown>)),
  );

  r.get(
    '/v1/exercises/:id',
    {
      schema: {
        operationId: 'getExercise',
        summary: 'Read an exercise visible to the caller',
        params: Type.Object({ id: Uuid }),
        response: { 200: DataOf(Exercise) },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => getExercise(tx, request.params.id)) }),
  );

  r.put(
    '/v1/exercises/:id/status',
    {
      onRequest: [requirePermission('exercises.manage_org')],
      schema: {
        operationId: 'setExerciseStatus',
        summary: 'Publish, archive or re-publish an exercise (spec 3.5)',
        description:
          "Needs exercises.manage_org at the exercise's organization; platform exercises: superadmins. draft -> published | archived, published -> archived, archived -> published; anything else 409 invalid_transition.",
        params: Type.Object({ id: Uuid }),
        body: SetStatusBody,
        response: { 200: DataOf(Exercise) },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => changeStatus(tx, actorOf(request), request.params.id, request.body.status)) }),
  );

  r.patch(
    '/v1/exercises/:id',
    {
      onRequest: [requirePermission('exercises.manage_org')],
      schema: {
        operationId: 'updateExercise',
        summary: 'Rename an exercise or change its movement definition',
        description:
          "Needs exercises.manage_org at the exercise's organization; platform exercises: superadmins. Sessions already started keep the definition they started with.",
        params: Type.Object({ id: Uuid }),
        body: UpdateExerciseBody,
        response: { 200: DataOf(Exercise) },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => updateExercise(tx, actorOf(request), request.params.id, request.body)) }),
  );

  r.delete(
    '/v1/exercises/:id',
    {
      onRequest: [requirePermission('exercises.manage_org')],
      schema: {
        operationId: 'deleteExercise',
        summary: 'Delete an exercise that nothing uses',
        description:
          '409 exercise_in_use when exercise sessions or treatment plans name it (archive it instead). Its movement definition and cached renders go with it.',
        params: Type.Object({ id: Uuid }),
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      await request.inTx((tx) => deleteExercise(tx, actorOf(request), request.params.id));
      return reply.status(204).send(null);
    },
  );

  r.post(
    '/v1/exercises/:id/asset-version',
    {
      onRequest: [requirePermission('exercises.manage_org')],
      schema: {
        operationId: 'bumpExerciseAssetVersion',
        summary: "Bump the exercise's asset version after its primitives changed (spec 9.6)",
        description:
          'Cached renders of older asset versions stop matching: the next compose of each recipe bakes from the new files. Old render rows stay as history.',
        params: Type.Object({ id: Uuid }),
        response: { 200: DataOf(Exercise) },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => bumpAssetVersion(tx, actorOf(request), request.params.id)) }),
  );

  r.post(
    '/v1/exercises/:id/propagate',
    {
      onRequest: [requireSuperadmin()],
      schema: {
        operationId: 'propagateExercise',
        summary: 'Copy a published platform exercise into organizations (superadmins)',
        description:
          "Each organization gets (or has refreshed) its own published copy, which names the template and plays the template's videos. Every copy is audited in its organization's trail with action_context template_propagate. 409 not_a_platform_exercise, not_published.",
        params: Type.Object({ id: Uuid }),
        body: PropagateBody,
        response: { 200: DataOf(Propagation) },
      },
    },
    async (request) => ({
      data: await request.inTx((tx) => propagateExercise(tx, actorOf(request), request.params.id, request.body.organization_ids ?? null)),
    }),
  );
}
