import type { Database } from '@clinic/db';
import { DataOf, ErrorResponse, ListOf } from '@clinic/http-kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { errors } from '@clinic/http-kit';
import { requirePermission } from '../../platform/gates.ts';
import { hasPermission } from '../../platform/identity/context.ts';
import { contextOf, errorSchemas, orgActorOf, orgIdOf, routesOf } from '../../platform/route.ts';
import { AvailabilityQuery, PutAvailabilityBody } from '../availability/schemas.ts';
import { MAX_WINDOW_DAYS } from '../availability/service.ts';
import { createFeed, deleteFeed, readFeed } from './feed.ts';
import {
  Calendar,
  CalendarAvailability,
  CalendarFeed,
  CalendarFeedParams,
  CalendarListQuery,
  CalendarParams,
  CreateCalendarBody,
  UpdateCalendarBody,
} from './schemas.ts';
import * as svc from './service.ts';

/** Staff who book or see appointments, or manage locations, read the calendars. */
async function readGate(request: FastifyRequest): Promise<void> {
  const ctx = contextOf(request);
  const codes = ['appointments.view_org', 'appointments.create', 'appointments.view_own', 'locations.manage'];
  if (!codes.some((c) => hasPermission(ctx, c)))
    throw errors.forbidden('This needs appointments.view_org, appointments.create or locations.manage.');
}
const manage = requirePermission('locations.manage');

export interface CalendarDeps {
  db: Database;
  /** PUBLIC_URL: feed URLs are made with it. */
  publicUrl: string;
  /** The host that names calendar entries (UID <appointment id>@host). */
  calendarHost: string;
}

/** Staff: a specialist for its own calendar, locations.manage for any (the service decides per calendar). */
async function staffGate(request: FastifyRequest): Promise<void> {
  const ctx = contextOf(request);
  if (!ctx.isStaff && !ctx.isSuperadmin)
    throw errors.forbidden("A calendar's feed is made by its specialist, or by staff with locations.manage.");
}

/** Calendars (spec 4.5 Scheduling): the bookable resources; rooms and devices are managed with locations.manage. */
export function calendarRoutes(app: FastifyInstance, deps: CalendarDeps): void {
  const r = routesOf(app, { tags: ['calendars'], errors: errorSchemas(400, 401, 403, 404, 409, 429) });

  r.get(
    '/v1/calendars',
    {
      onRequest: [readGate],
      schema: {
        operationId: 'listCalendars',
        summary: 'List the calendars of the organization',
        description:
          'Staff who book or see appointments, or manage locations. Filters: kind, location_id, specialist_id, created_at_after/_before. Sort: name, kind, created_at.',
        querystring: CalendarListQuery,
        response: { 200: ListOf(Calendar), 422: ErrorResponse },
      },
    },
    async (request) => request.inTx((tx) => svc.listCalendars(tx, orgIdOf(request), request.query)),
  );

  r.post(
    '/v1/calendars',
    {
      config: { references: { location_id: 'locations' }, idempotent: true },
      onRequest: [manage],
      schema: {
        operationId: 'createCalendar',
        summary: 'Add a room or a device calendar at a location',
        description: "Needs locations.manage. A specialist's calendar is made with the specialist. Honours Idempotency-Key.",
        body: CreateCalendarBody,
        response: { 201: DataOf(Calendar) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      return reply.status(201).send({ data: await request.inTx((tx) => svc.createCalendar(tx, actor, request.body)) });
    },
  );

  r.get(
    '/v1/calendars/:id',
    {
      onRequest: [readGate],
      schema: { operationId: 'getCalendar', summary: 'Read a calendar', params: CalendarParams, response: { 200: DataOf(Calendar) } },
    },
    async (request) => ({ data: await request.inTx((tx) => svc.getCalendar(tx, orgIdOf(request), request.params.id.toLowerCase())) }),
  );

  r.patch(
    '/v1/calendars/:id',
    {
      onRequest: [manage],
      schema: {
        operationId: 'updateCalendar',
        summary: 'Rename a calendar or change its description',
        description: 'Needs locations.manage.',
        params: CalendarParams,
        body: UpdateCalendarBody,
        response: { 200: DataOf(Calendar) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => svc.updateCalendar(tx, actor, request.params.id.toLowerCase(), request.body)) };
    },
  );

  r.delete(
    '/v1/calendars/:id',
    {
      onRequest: [manage],
      schema: {
        operationId: 'deleteCalendar',
        summary: 'Delete a room or device calendar',
        description:
          "Needs locations.manage. 409 calendar_in_use with appointments or holds ahead; 409 specialist_calendar for a specialist's.",
        params: CalendarParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      await request.inTx((tx) => svc.deleteCalendar(tx, actor, request.params.id.toLowerCase()));
      return reply.status(204).send(null);
    },
  );

  r.get(
    '/v1/calendars/:id/availability',
    {
      onRequest: [readGate],
      schema: {
        operationId: 'getCalendarAvailability',
        summary: "Read a room's or device's availability",
        description: `As for specialists (GET /v1/specialists/{id}/availability); with from and to (at most ${MAX_WINDOW_DAYS} days) the open windows.`,
        params: CalendarParams,
        querystring: AvailabilityQuery,
        response: { 200: DataOf(CalendarAvailability), 422: ErrorResponse },
      },
    },
    async (request) => ({
      data: await request.inTx((tx) => svc.getCalendarAvailability(tx, orgIdOf(request), request.params.id.toLowerCase(), request.query)),
    }),
  );

  r.put(
    '/v1/calendars/:id/availability',
    {
      config: { references: { ':id': 'calendars', 'rules[].location_id': 'locations', 'exceptions[].location_id': 'locations' } },
      onRequest: [manage],
      schema: {
        operationId: 'putCalendarAvailability',
        summary: "Replace a room's or device's availability",
        description: "Needs locations.manage. The rules of a specialist's availability, at the calendar's own location.",
        params: CalendarParams,
        body: PutAvailabilityBody,
        response: { 200: DataOf(CalendarAvailability), 422: ErrorResponse },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => svc.putCalendarAvailability(tx, actor, request.params.id.toLowerCase(), request.body)) };
    },
  );

  r.post(
    '/v1/calendars/:id/feed',
    {
      config: { idempotent: true },
      onRequest: [staffGate],
      schema: {
        operationId: 'createCalendarFeed',
        summary: "Make (or replace) the calendar's secret iCalendar feed URL",
        description:
          "The calendar's specialist for its own calendar, or locations.manage for any. Returns the URL once: only its token's SHA-256 is kept, and a new one replaces the old (which stops working). The feed shows busy blocks with the service's name and the appointment id, never the patient. Honours Idempotency-Key.",
        params: CalendarParams,
        response: { 201: DataOf(CalendarFeed) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      return reply
        .status(201)
        .header('cache-control', 'no-store')
        .send({ data: await request.inTx((tx) => createFeed(tx, actor, request.params.id.toLowerCase(), deps.publicUrl)) });
    },
  );

  r.delete(
    '/v1/calendars/:id/feed',
    {
      onRequest: [staffGate],
      schema: {
        operationId: 'deleteCalendarFeed',
        summary: "Remove the calendar's feed URL",
        description: 'As POST: its specialist, or locations.manage. The URL stops working; 204 also when there was none.',
        params: CalendarParams,
        response: { 204: Type.Null({ description: 'Removed' }) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      await request.inTx((tx) => deleteFeed(tx, actor, request.params.id.toLowerCase()));
      return reply.status(204).send(null);
    },
  );

  // Per IP like every public route (RATELIMIT_PUBLIC_*): the pipeline's (platform/limits.ts).
  const pub = routesOf(app, { tags: ['public'], errors: errorSchemas(404, 429) });
  pub.get(
    '/v1/public/calendar-feeds/:token.ics',
    {
      config: { public: true },
      schema: {
        operationId: 'getCalendarFeed',
        summary: "A calendar's iCalendar feed (subscribe to its secret URL)",
        description:
          'Public: the secret in the path is the credential (no bearer token), rate limited per IP; the path is redacted in logs. text/calendar: booked appointments from 90 days ago on, and those cancelled or moved in the last 30 days as STATUS:CANCELLED; each a busy block with the service name and the appointment id, never the patient. 404 for an unknown, replaced or removed feed.',
        params: CalendarFeedParams,
      },
    },
    async (request, reply) => {
      const body = await readFeed(deps.db, request.params.token, deps.calendarHost);
      return reply
        .header('content-type', 'text/calendar; charset=utf-8')
        .header('cache-control', 'private, no-store')
        .header('referrer-policy', 'no-referrer')
        .header('x-robots-tag', 'noindex')
        .send(body);
    },
  );
}
