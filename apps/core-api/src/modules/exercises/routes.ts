import { DataOf, ErrorResponse, errors, ListOf, ListQueryWith, Uuid } from '@clinic/http-kit';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { requirePermission } from '../../platform/gates.ts';
import type { Runtime } from '../../platform/runtime.ts';
import { CreateExerciseBody, Exercise, SetStatusBody } from './schemas.ts';
import { changeStatus, createExercise, getExercise, listExercises } from './service.ts';
import { actorOf, bearer, contextOf } from '../../platform/route.ts';

const errs = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 429: ErrorResponse };
const tags = ['exercises'];

/** A minimal exercise library (spec 2.12, 3.5): the platform's and the organization's exercises. */
export function exerciseRoutes(app: FastifyInstance, rt: Runtime): void {
  void rt;
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post(
    '/v1/exercises',
    {
      config: { idempotent: true },
      onRequest: [requirePermission('exercises.manage_org')],
      schema: {
        operationId: 'createExercise',
        tags,
        security: bearer,
        summary: 'Add an exercise to the library of the organization in scope (X-Organization-ID)',
        description: 'Needs exercises.manage_org. Starts as draft. 409 slug_taken. `movement` makes it scorable by telemetry.',
        body: CreateExerciseBody,
        response: { 201: DataOf(Exercise), ...errs },
      },
    },
    async (request, reply) => {
      const orgId = contextOf(request).orgId;
      if (!orgId) throw errors.forbidden('Name the organization with X-Organization-ID.');
      const row = await request.inTx((tx) => createExercise(tx, actorOf(request), orgId, request.body));
      return reply.status(201).send({ data: row });
    },
  );

  r.get(
    '/v1/exercises',
    {
      schema: {
        operationId: 'listExercises',
        tags,
        security: bearer,
        summary: 'Exercises visible to the caller: the platform library and the organization in scope',
        description:
          'Patients see published ones; staff also drafts and archived ones of their organization. Filters status, kind; sort name, slug, created_at.',
        querystring: ListQueryWith({ status: Type.Optional(Type.String()), kind: Type.Optional(Type.String()) }),
        response: { 200: ListOf(Exercise), ...errs, 422: ErrorResponse },
      },
    },
    async (request) => request.inTx((tx) => listExercises(tx, contextOf(request).orgId, request.query as Record<string, unknown>)),
  );

  r.get(
    '/v1/exercises/:id',
    {
      schema: {
        operationId: 'getExercise',
        tags,
        security: bearer,
        summary: 'Read an exercise visible to the caller',
        params: Type.Object({ id: Uuid }),
        response: { 200: DataOf(Exercise), ...errs },
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
        tags,
        security: bearer,
        summary: 'Publish, archive or re-publish an exercise (spec 3.5)',
        description:
          "Needs exercises.manage_org at the exercise's organization; platform exercises: superadmins. draft -> published | archived, published -> archived, archived -> published; anything else 409 invalid_transition.",
        params: Type.Object({ id: Uuid }),
        body: SetStatusBody,
        response: { 200: DataOf(Exercise), ...errs },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => changeStatus(tx, actorOf(request), request.params.id, request.body.status)) }),
  );
}
