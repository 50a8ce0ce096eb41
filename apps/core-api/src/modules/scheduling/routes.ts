import { DataOf, enforceLimit, type RateLimiter } from '@clinic/http-kit';
import type { Database } from '@clinic/db';
import type { OutgoingHttpHeaders } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { errorSchemas, routesOf } from '../../platform/route.ts';
import { Appointment } from '../appointments/schemas.ts';
import { listenHoldFeed, localHoldFeed } from './hold-feed.ts';
import { createHoldStreams } from './hold-streams.ts';
import {
  Availability,
  AvailabilityQuery,
  BookingBody,
  BookingForm,
  BookingFormQuery,
  Hold,
  HoldBody,
  HoldParams,
  HoldStreamQuery,
  NewHold,
} from './schemas.ts';
import { bookGuest, MAX_RANGE_DAYS, placeHold, publicAvailability, publicBookingForm, type PublicCall, releaseHold } from './service.ts';

export interface SchedulingDeps {
  db: Database;
  /** Holds and bookings per IP and per organization (RATELIMIT_HOLDS_PER_IP, RATELIMIT_HOLDS_PER_ORG). */
  holdsPerIp: RateLimiter;
  holdsPerOrg: RateLimiter;
  holdMinutes: number;
  holdStreams: {
    /** Open streams per client address on this instance (SCHEDULING_HOLD_STREAMS_PER_IP). */
    perIp: number;
    /**
     * PostgreSQL: the URL of the database, for the instance's one listening connection (LISTEN
     * hold_events). Null on PGlite: the in-process bus of hold-feed.ts.
     */
    listenUrl: string | null;
  };
}

/** What keeps a server-sent-events response flowing through proxies (nginx buffers otherwise) and never cached. */
const EVENT_STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
  // Closed with the stream, so that a server shutting down is not kept waiting by an idle keep-alive socket.
  connection: 'close',
};

/**
 * The public booking flow (spec 4.5 Scheduling and Appointments, 5.2-5.3): free slots, holds and guest
 * bookings, with no token. The paths are those of spec 4.5 (/v1/public/...), not the earlier
 * /v1/scheduling/... index (docs/decisions.md).
 */
export function schedulingRoutes(app: FastifyInstance, deps: SchedulingDeps): void {
  const r = routesOf(app, { tags: ['public'], errors: errorSchemas(400, 404, 409, 422, 429) });
  const consume = async (limiter: RateLimiter, key: string, reply: FastifyReply) => {
    await enforceLimit(limiter, key, reply);
  };
  // The per-IP budget of every public route (RATELIMIT_PUBLIC_*) is the pipeline's (platform/limits.ts).
  const holdLimits = async (request: FastifyRequest, reply: FastifyReply) => consume(deps.holdsPerIp, `ip:${request.ip}`, reply);
  const call = (request: FastifyRequest, organization?: string): PublicCall => ({ organization, host: request.hostname, ip: request.ip });
  const streams = createHoldStreams({
    db: deps.db,
    feed: deps.holdStreams.listenUrl ? listenHoldFeed(deps.holdStreams.listenUrl, app.log) : localHoldFeed(deps.db),
    perIp: deps.holdStreams.perIp,
    logger: app.log,
  });
  // Before the server stops accepting: open streams would otherwise keep app.close() waiting for ever.
  app.addHook('preClose', () => streams.close());

  r.get(
    '/v1/public/availability',
    {
      config: { public: true },
      schema: {
        operationId: 'getPublicAvailability',
        summary: 'The free slots of a public service',
        description: `Public (no token), rate limited per IP. From weekly rules and exceptions in each location's zone, minus appointments with their buffers and live holds, within the service's minimum notice and days ahead, on the service's grid (docs/scheduling.md). from and to are local dates of time_zone (at most ${MAX_RANGE_DAYS} days).`,
        querystring: AvailabilityQuery,
        response: { 200: DataOf(Availability) },
      },
    },
    async (request) => ({ data: await publicAvailability(deps.db, call(request, request.query.organization), request.query) }),
  );

  r.get(
    '/v1/public/booking-form',
    {
      config: { public: true },
      schema: {
        operationId: 'getPublicBookingForm',
        summary: 'What a guest booking of a public service must carry',
        description:
          "Public (no token), rate limited per IP. The consents the organization requires (and telemedicine for a video service) at their latest version with their texts, and the service's intake questions: exactly what POST /v1/public/bookings checks.",
        querystring: BookingFormQuery,
        response: { 200: DataOf(BookingForm) },
      },
    },
    async (request) => ({ data: await publicBookingForm(deps.db, call(request, request.query.organization), request.query.service_id) }),
  );

  r.post(
    '/v1/public/holds',
    {
      config: { public: true, idempotent: true },
      onRequest: [holdLimits],
      schema: {
        operationId: 'placeHold',
        summary: 'Hold a slot for a while',
        description: `Public, rate limited per IP and per organization. The slot is set aside for ${deps.holdMinutes} minutes (SCHEDULING_HOLD_MINUTES) for whoever has the secret returned once. 409 slot_unavailable when it is held or booked already. Honours Idempotency-Key.`,
        body: HoldBody,
        response: { 201: DataOf(NewHold) },
      },
    },
    async (request, reply) => {
      const c = {
        ...call(request, request.body.organization),
        perOrganization: (orgId: string) => consume(deps.holdsPerOrg, `org:${orgId}`, reply),
      };
      return reply.status(201).send({ data: await placeHold(deps.db, c, request.body, deps.holdMinutes) });
    },
  );

  r.delete(
    '/v1/public/holds/:id',
    {
      config: { public: true },
      schema: {
        operationId: 'releaseHold',
        summary: 'Give a held slot back',
        description:
          'Public; the hold secret in X-Hold-Secret (404 without the right one). 409 hold_ended when it has expired, been released or booked.',
        params: HoldParams,
        headers: Type.Object({ 'x-hold-secret': Type.String({ maxLength: 200 }) }),
        response: { 200: DataOf(Hold) },
      },
    },
    async (request) => {
      const hold = await releaseHold(deps.db, request.params.id.toLowerCase(), request.headers['x-hold-secret']);
      streams.announce({ organization_id: hold.organization_id, id: hold.id, status: 'released', appointment_id: null });
      return { data: hold };
    },
  );

  r.get(
    '/v1/public/holds/:id/stream',
    {
      config: { public: true },
      // A HEAD would open a stream that sends nothing and never ends.
      exposeHeadRoute: false,
      schema: {
        operationId: 'streamHold',
        summary: "Follow a hold's countdown and end (server-sent events)",
        description:
          'Public, rate limited per IP; the hold secret in X-Hold-Secret, or in the secret query parameter for EventSource clients that cannot set headers (never logged). 404 without the right one. ' +
          'A text/event-stream: `event: remaining` with {seconds_left, expires_at} at once and then at each whole second, a `: keep-alive` comment every 15 seconds, and finally exactly one of `event: released`, `event: converted` (with appointment_id) or `event: expired`, after which the server closes the stream; a hold that has ended answers its final event at once. ' +
          'Close the EventSource on the final event (it would otherwise reconnect and be told the same again). Changes made on any instance arrive within moments. ' +
          `At most ${deps.holdStreams.perIp} open streams per address on one instance (SCHEDULING_HOLD_STREAMS_PER_IP; 429 beyond).`,
        params: HoldParams,
        querystring: HoldStreamQuery,
        headers: Type.Object({ 'x-hold-secret': Type.Optional(Type.String({ maxLength: 200 })) }),
        produces: ['text/event-stream'],
        response: { 200: Type.String({ description: 'text/event-stream' }) },
      },
    },
    async (request, reply) => {
      await streams.open({
        id: request.params.id.toLowerCase(),
        secret: request.headers['x-hold-secret'] ?? request.query.secret,
        ip: request.ip,
        // The response is written directly from here on: Fastify sends nothing more (onResponse still runs).
        begin: () => {
          reply.hijack();
          if (request.raw.socket?.destroyed) return null;
          const headers = { ...reply.getHeaders(), 'x-request-id': request.id, ...EVENT_STREAM_HEADERS } as OutgoingHttpHeaders;
          reply.raw.writeHead(200, headers);
          return reply.raw;
        },
      });
    },
  );

  r.post(
    '/v1/public/bookings',
    {
      config: { public: true, idempotent: true },
      onRequest: [holdLimits],
      schema: {
        operationId: 'bookAsGuest',
        summary: 'Book a held slot as a guest',
        description:
          "Public, rate limited. Turns a live hold into an appointment with the guest's name, email and phone and the consents the organization requires (422 with fields otherwise). The booking is not tied to an existing patient by its email: the clinic ties it to a patient record. 409 hold_ended, 409 privacy_notice_missing. Honours Idempotency-Key.",
        body: BookingBody,
        response: { 201: DataOf(Appointment) },
      },
    },
    async (request, reply) => {
      const appointment = await bookGuest(deps.db, call(request, request.body.organization), request.body);
      streams.announce({
        organization_id: appointment.organization_id,
        id: request.body.hold_id.toLowerCase(),
        status: 'converted',
        appointment_id: appointment.id,
      });
      return reply.status(201).send({ data: appointment });
    },
  );
}
