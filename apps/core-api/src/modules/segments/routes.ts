import { DataOf, ErrorResponse, errors, ListOf } from '@clinic/http-kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { requirePermission } from '../../platform/gates.ts';
import { hasPermission, isPatientCaller } from '../../platform/identity/context.ts';
import { contextOf, errorSchemas, orgActorOf, orgIdOf, routesOf } from '../../platform/route.ts';
import * as s from './schemas.ts';
import * as svc from './service.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 409, 429);
const manage = requirePermission('segments.manage');
const READ_NOTE = 'segments.view_org or segments.manage.';
const read = async (request: FastifyRequest) => {
  const ctx = contextOf(request);
  if (!hasPermission(ctx, 'segments.view_org') && !hasPermission(ctx, 'segments.manage'))
    throw errors.forbidden('This needs the segments.view_org or segments.manage permission in the organization.');
};
/** Every member with segments.view_org; one's own membership with view_own_membership, or as a patient (row ownership). */
const readMembers = async (request: FastifyRequest) => {
  const ctx = contextOf(request);
  if (!['segments.view_org', 'segments.manage', 'segments.view_own_membership'].some((c) => hasPermission(ctx, c)) && !isPatientCaller(ctx))
    throw errors.forbidden('This needs segments.view_org, or segments.view_own_membership for your own membership.');
};

/** Segments (spec 4.5 Segments; docs/automations.md). */
export function segmentRoutes(app: FastifyInstance, deps: { syncLimit: number }): void {
  const r = routesOf(app, { tags: ['segments'], errors: errorResponses });
  const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;

  r.get(
    '/v1/segment-fields',
    {
      onRequest: [read],
      schema: {
        operationId: 'listSegmentFields',
        summary: 'The field catalog of the criteria language',
        description: `${READ_NOTE} Patient fields, the organization's published patient custom fields (custom.<key>, typed), appointment history, treatment plan enrollments, consents and tags, each with its operators.`,
        response: { 200: DataOf(Type.Array(s.Field)) },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => svc.fields(tx, orgIdOf(request))) }),
  );

  r.get(
    '/v1/segments',
    {
      onRequest: [read],
      schema: {
        operationId: 'listSegments',
        summary: 'List the segments of the organization',
        description: `${READ_NOTE} Pagination, sort (created_at, name, evaluated_at, member_count; newest first by default), created_at_after/_before.`,
        querystring: s.SegmentListQuery,
        response: { 200: ListOf(s.Segment), 422: ErrorResponse },
      },
    },
    async (request) => request.inTx((tx) => svc.listSegments(tx, orgIdOf(request), request.query as Record<string, unknown>)),
  );

  r.post(
    '/v1/segments',
    {
      config: { idempotent: true },
      onRequest: [manage],
      schema: {
        operationId: 'createSegment',
        summary: 'Create a segment from criteria',
        description:
          'Needs segments.manage. The criteria are checked against the field catalog (400 with fields). 409 segment_name_taken. Honours Idempotency-Key.',
        body: s.CreateSegmentBody,
        response: { 201: DataOf(s.Segment) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      return reply
        .status(201)
        .send({ data: await request.inTx((tx) => svc.createSegment(tx, actor, request.body as { name: string; criteria: unknown })) });
    },
  );

  r.get(
    '/v1/segments/:id',
    {
      onRequest: [read],
      schema: {
        operationId: 'getSegment',
        summary: 'Read a segment, with its last evaluation (progress of a running one)',
        description: READ_NOTE,
        params: s.IdParams,
        response: { 200: DataOf(s.Segment) },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => svc.getSegment(tx, orgIdOf(request), idOf(request))) }),
  );

  r.patch(
    '/v1/segments/:id',
    {
      onRequest: [manage],
      schema: {
        operationId: 'updateSegment',
        summary: 'Change a segment',
        description:
          'Needs segments.manage. New criteria apply from the next evaluation; the members stay those of the last one until then.',
        params: s.IdParams,
        body: s.UpdateSegmentBody,
        response: { 200: DataOf(s.Segment) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => svc.updateSegment(tx, actor, idOf(request), request.body as { criteria?: unknown })) };
    },
  );

  r.delete(
    '/v1/segments/:id',
    {
      onRequest: [manage],
      schema: {
        operationId: 'deleteSegment',
        summary: 'Delete a segment and its members',
        description: 'Needs segments.manage. 409 segment_in_use while a scheduled automation rule runs over it.',
        params: s.IdParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      await request.inTx((tx) => svc.deleteSegment(tx, actor, idOf(request)));
      return reply.status(204).send(null);
    },
  );

  r.post(
    '/v1/segments/:id/evaluate',
    {
      config: { idempotent: true },
      onRequest: [manage],
      schema: {
        operationId: 'evaluateSegment',
        summary: 'Materialise the members of a segment now',
        description: `Needs segments.manage. Runs the compiled criteria under your row policies. Organizations with at most SEGMENTS_SYNC_LIMIT (${deps.syncLimit} by default config) patients: 200 with the finished evaluation; larger ones: 202 and a background job whose progress (processed of total) GET /v1/segments/{id} shows as last_evaluation. Members switch to the new set when it is complete. Honours Idempotency-Key.`,
        params: s.IdParams,
        response: { 200: DataOf(s.Evaluation), 202: DataOf(s.Evaluation) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      const r = await request.inTx((tx) => svc.evaluate(tx, actor, idOf(request), deps.syncLimit));
      const { requested_by_principal_id: _p, requested_permissions: _q, organization_id: _o, segment_id: _s, ...evaluation } = r.evaluation;
      return reply.status(r.status).send({ data: evaluation });
    },
  );

  r.get(
    '/v1/segments/:id/members',
    {
      onRequest: [readMembers],
      schema: {
        operationId: 'listSegmentMembers',
        summary: 'The members of the last finished evaluation',
        description:
          'segments.view_org (or manage): every member (404 for no such segment). segments.view_own_membership, or a patient: only your own membership (an empty list when you are not a member, also when no such segment exists). Pagination, sort (patient_id, last_name).',
        params: s.IdParams,
        querystring: s.MemberListQuery,
        response: { 200: ListOf(s.Member), 422: ErrorResponse },
      },
    },
    async (request) => {
      const ctx = contextOf(request);
      // Readers of every member learn whether the segment exists (404); one's own membership never says.
      const seesAll = hasPermission(ctx, 'segments.view_org') || hasPermission(ctx, 'segments.manage');
      return request.inTx((tx) => svc.listMembers(tx, orgIdOf(request), idOf(request), request.query as Record<string, unknown>, seesAll));
    },
  );
}
