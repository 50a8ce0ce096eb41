import { DataOf, ErrorResponse, ListOf } from '@clinic/http-kit';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { requirePermission } from '../../platform/gates.ts';
import type { Runtime } from '../../platform/runtime.ts';
import {
  Attempt,
  AttemptListQuery,
  CreateSubscriptionBody,
  DeliveryParams,
  EventTypeInfo,
  ResendResult,
  RotateSecretBody,
  Subscription,
  SubscriptionListQuery,
  SubscriptionParams,
  SubscriptionWithSecret,
  TestResult,
  UpdateSubscriptionBody,
} from './schemas.ts';
import { createWebhookSender } from './sender.ts';
import * as svc from './service.ts';
import { actorOf, errorSchemas, routesOf } from '../../platform/route.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 409, 429);
const tags = ['webhooks'];
const manage = requirePermission('webhooks.manage');
const ORG_NOTE = 'Needs webhooks.manage at the organization in scope (X-Organization-ID, spec 4.1).';

/** Webhook subscriptions (spec 4.9, 6.1): organization-scoped, behind webhooks.manage. */
export function webhookRoutes(app: FastifyInstance, rt: Runtime): void {
  const r = routesOf(app, { tags, errors: errorResponses });
  const sender = createWebhookSender(rt.config.webhooks);
  app.addHook('onClose', async () => sender.close());
  const deps: svc.WebhookDeps = { secrets: rt.secrets, sender, config: rt.config.webhooks };

  r.get(
    '/v1/webhook-event-types',
    {
      onRequest: [manage],
      schema: {
        operationId: 'listWebhookEventTypes',
        summary: 'The catalog of event types a subscription can choose',
        description: `${ORG_NOTE} The same catalog is in docs/events.md and in this description's webhooks section.`,
        response: { 200: DataOf(Type.Array(EventTypeInfo)) },
      },
    },
    async () => ({ data: svc.eventTypes() }),
  );

  r.get(
    '/v1/webhook-subscriptions',
    {
      onRequest: [manage],
      schema: {
        operationId: 'listWebhookSubscriptions',
        summary: 'List the webhook subscriptions of the organization',
        description: `${ORG_NOTE} Pagination, sort (created_at, url, status; newest first by default), status, created_at_after/_before. Never returns secrets.`,
        querystring: SubscriptionListQuery,
        response: { 200: ListOf(Subscription), 422: ErrorResponse },
      },
    },
    async (request) => request.inTx((tx) => svc.listSubscriptions(tx, actorOf(request), request.query)),
  );

  r.post(
    '/v1/webhook-subscriptions',
    {
      config: { idempotent: true },
      onRequest: [manage],
      schema: {
        operationId: 'createWebhookSubscription',
        summary: 'Create a webhook subscription',
        description: `${ORG_NOTE} HTTPS URLs that resolve to public addresses only. The response carries signing_secret, shown this once. Honours Idempotency-Key.`,
        body: CreateSubscriptionBody,
        response: { 201: DataOf(SubscriptionWithSecret) },
      },
    },
    async (request, reply) => {
      const row = await request.inTx((tx) => svc.createSubscription(tx, deps, actorOf(request), request.body));
      return reply.status(201).send({ data: row });
    },
  );

  r.get(
    '/v1/webhook-subscriptions/:uid',
    {
      onRequest: [manage],
      schema: {
        operationId: 'getWebhookSubscription',
        summary: 'Read a webhook subscription',
        description: ORG_NOTE,
        params: SubscriptionParams,
        response: { 200: DataOf(Subscription) },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => svc.getSubscription(tx, actorOf(request), request.params.uid)) }),
  );

  r.patch(
    '/v1/webhook-subscriptions/:uid',
    {
      onRequest: [manage],
      schema: {
        operationId: 'updateWebhookSubscription',
        summary: 'Change a webhook subscription (URL, event types, description, status)',
        description: `${ORG_NOTE} status "active" re-enables a disabled subscription; "disabled" pauses it (pending deliveries then fail).`,
        params: SubscriptionParams,
        body: UpdateSubscriptionBody,
        response: { 200: DataOf(Subscription) },
      },
    },
    async (request) => ({
      data: await request.inTx((tx) => svc.updateSubscription(tx, deps, actorOf(request), request.params.uid, request.body)),
    }),
  );

  r.delete(
    '/v1/webhook-subscriptions/:uid',
    {
      onRequest: [manage],
      schema: {
        operationId: 'deleteWebhookSubscription',
        summary: 'Delete a webhook subscription and its delivery log',
        description: ORG_NOTE,
        params: SubscriptionParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      await request.inTx((tx) => svc.deleteSubscription(tx, actorOf(request), request.params.uid));
      return reply.status(204).send(null);
    },
  );

  r.get(
    '/v1/webhook-subscriptions/:uid/events',
    {
      onRequest: [manage],
      schema: {
        operationId: 'listWebhookDeliveries',
        summary: 'The delivery log: one row per attempt',
        description: `${ORG_NOTE} Pagination, sort (created_at, attempt, status_code; newest first), delivery_status, event_type, delivery_id, created_at_after/_before.`,
        params: SubscriptionParams,
        querystring: AttemptListQuery,
        response: { 200: ListOf(Attempt), 422: ErrorResponse },
      },
    },
    async (request) => request.inTx((tx) => svc.listDeliveryLog(tx, actorOf(request), request.params.uid, request.query)),
  );

  r.post(
    '/v1/webhook-subscriptions/:uid/test',
    {
      config: { idempotent: true },
      onRequest: [manage],
      schema: {
        operationId: 'testWebhookSubscription',
        summary: 'Send one real signed test delivery now and return its result',
        description: `${ORG_NOTE} Event type webhook.test, sent to this subscription only; logged like any attempt, never retried. 200 whatever the endpoint answered: see success and status_code.`,
        params: SubscriptionParams,
        response: { 200: DataOf(TestResult) },
      },
    },
    async (request) => ({ data: await svc.sendTest((fn) => request.inTx(fn), deps, actorOf(request), request.params.uid) }),
  );

  r.post(
    '/v1/webhook-subscriptions/:uid/rotate-secret',
    {
      config: { idempotent: true },
      onRequest: [manage],
      schema: {
        operationId: 'rotateWebhookSecret',
        summary: 'Replace the signing secret, keeping the old one for an overlap window',
        description: `${ORG_NOTE} Returns the new signing_secret once. Until previous_secret_expires_at deliveries carry both signatures (docs/events.md). Honours Idempotency-Key (a retry gets the same new secret instead of rotating again).`,
        params: SubscriptionParams,
        body: RotateSecretBody,
        response: { 200: DataOf(SubscriptionWithSecret) },
      },
    },
    async (request) => ({
      data: await request.inTx((tx) => svc.rotateSecret(tx, deps, actorOf(request), request.params.uid, request.body ?? {})),
    }),
  );

  r.post(
    '/v1/webhook-subscriptions/:uid/deliveries/:deliveryId/resend',
    {
      config: { idempotent: true },
      onRequest: [manage],
      schema: {
        operationId: 'resendWebhookDelivery',
        summary: 'Send a failed delivery again',
        description: `${ORG_NOTE} 409 delivery_not_failed unless the delivery failed; the worker sends it as its next attempt (trigger "resend"). Honours Idempotency-Key.`,
        params: DeliveryParams,
        response: { 202: DataOf(ResendResult) },
      },
    },
    async (request, reply) => {
      const data = await request.inTx((tx) => svc.resendDelivery(tx, actorOf(request), request.params.uid, request.params.deliveryId));
      return reply.status(202).send({ data });
    },
  );
}
