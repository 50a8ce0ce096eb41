import type { Queryable } from '@clinic/db';
import { errors, listEnvelope, parseDateRange, parsePagination, parseSort, type ListEnvelope, isUuid } from '@clinic/http-kit';
import type { Config } from '../../config.ts';
import type { SecretBox } from '../../platform/secrets.ts';
import { recordChange } from '../../platform/audit.ts';
import { EVENT_CATALOG, SUBSCRIBABLE_TYPES } from '../events/catalog.ts';
import type { Actor } from '../../platform/actor.ts';
import * as q from './queries.ts';
import { ATTEMPT_SORT, SUBSCRIPTION_SORT } from './schemas.ts';
import type { WebhookSender } from './sender.ts';
import { newSigningSecret, signDelivery } from './signing.ts';
import { resolvesPublicly, urlProblem } from '../../platform/outgoing-url.ts';

export interface WebhookDeps {
  secrets: SecretBox;
  sender: WebhookSender;
  config: Config['webhooks'];
}

/** Runs fn in the request's transaction (request.inTx): the test route needs two, around its HTTP call. */
export type InTx = <T>(fn: (tx: Queryable) => Promise<T>) => Promise<T>;

const notFound = () => errors.notFound('No webhook subscription with this id in this organization.');

/** Subscriptions belong to one organization: a superadmin acting without X-Organization-ID has none. */
export function orgOf(actor: Actor): string {
  const org = actor.ctx.orgId;
  if (!org)
    throw errors.validation(
      { 'x-organization-id': 'name the organization whose subscriptions to manage' },
      'Send X-Organization-ID: webhook subscriptions belong to an organization.',
    );
  return org;
}

function audit(tx: Queryable, actor: Actor, orgId: string, action: string, id: string, data: Record<string, unknown>) {
  return recordChange(tx, actor, action, { type: 'webhook_subscription', id: id, organizationId: orgId }, data);
}

async function checkUrl(url: string, config: Config['webhooks']): Promise<void> {
  const problem = urlProblem(url, config.allowPrivateNetworks) ?? (await resolvesPublicly(url, config.allowPrivateNetworks));
  if (problem) throw errors.validation({ url: problem });
}

function checkEventTypes(types: string[]): string[] {
  const unique = [...new Set(types)];
  const unknown = unique.filter((t) => t !== '*' && !SUBSCRIBABLE_TYPES.has(t));
  if (unknown.length)
    throw errors.validation({ event_types: `unknown event types: ${unknown.join(', ')} (see GET /v1/webhook-event-types)` });
  if (unique.includes('*') && unique.length > 1) throw errors.validation({ event_types: '"*" already means every type; send it alone' });
  return unique.sort();
}

export async function createSubscription(
  tx: Queryable,
  deps: WebhookDeps,
  actor: Actor,
  body: { url: string; event_types: string[]; description?: string | null },
): Promise<q.SubscriptionRow & { signing_secret: string }> {
  const orgId = orgOf(actor);
  await checkUrl(body.url, deps.config);
  const eventTypes = checkEventTypes(body.event_types);
  const secret = newSigningSecret();
  const row = await q.insertSubscription(tx, orgId, {
    url: body.url,
    description: body.description ?? null,
    eventTypes,
    secretSealed: deps.secrets.seal(secret),
    principalId: actor.ctx.principalId,
  });
  await audit(tx, actor, orgId, 'webhook_subscription.created', row.id, { url: row.url, event_types: row.event_types });
  return { ...row, signing_secret: secret };
}

export async function getSubscription(tx: Queryable, actor: Actor, id: string): Promise<q.SubscriptionRow> {
  const row = await q.findSubscription(tx, orgOf(actor), id);
  if (!row) throw notFound();
  return row;
}

export async function listSubscriptions(
  tx: Queryable,
  actor: Actor,
  query: Record<string, unknown>,
): Promise<ListEnvelope<q.SubscriptionRow>> {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, SUBSCRIPTION_SORT);
  const created = parseDateRange(query, 'created_at');
  const status = typeof query.status === 'string' && query.status ? query.status : undefined;
  const { rows, total } = await q.listSubscriptions(tx, orgOf(actor), { ...(status ? { status } : {}), created }, sort, page);
  return listEnvelope(rows, page, total);
}

export async function updateSubscription(
  tx: Queryable,
  deps: WebhookDeps,
  actor: Actor,
  id: string,
  body: { url?: string; event_types?: string[]; description?: string | null; status?: 'active' | 'disabled' },
): Promise<q.SubscriptionRow> {
  if (!Object.keys(body).length) throw errors.validation({ _body: 'give at least one field to change' });
  const orgId = orgOf(actor);
  const current = await q.findSubscription(tx, orgId, id, { forUpdate: true });
  if (!current) throw notFound();
  if (body.url !== undefined) await checkUrl(body.url, deps.config);
  const eventTypes = body.event_types !== undefined ? checkEventTypes(body.event_types) : undefined;
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  const set: Parameters<typeof q.updateSubscription>[3] = {};
  if (body.url !== undefined && body.url !== current.url) {
    set.url = body.url;
    changes.url = { from: current.url, to: body.url };
  }
  if (body.description !== undefined && body.description !== current.description) {
    set.description = body.description;
    changes.description = { from: current.description, to: body.description };
  }
  if (eventTypes && eventTypes.join() !== current.event_types.join()) {
    set.eventTypes = eventTypes;
    changes.event_types = { from: current.event_types, to: eventTypes };
  }
  if (body.status !== undefined && body.status !== current.status) {
    set.status = body.status;
    changes.status = { from: current.status, to: body.status };
  }
  if (!Object.keys(changes).length) return current;
  const row = await q.updateSubscription(tx, orgId, id, set);
  await audit(tx, actor, orgId, 'webhook_subscription.updated', id, { changes });
  return row;
}

export async function deleteSubscription(tx: Queryable, actor: Actor, id: string): Promise<void> {
  const orgId = orgOf(actor);
  const current = await q.findSubscription(tx, orgId, id, { forUpdate: true });
  if (!current) throw notFound();
  await q.deleteSubscription(tx, orgId, id);
  await audit(tx, actor, orgId, 'webhook_subscription.deleted', id, { url: current.url, event_types: current.event_types });
}

/**
 * A new signing secret, shown once. The old one keeps signing (a second signature on every delivery)
 * until the overlap ends, so receivers can switch at their own pace.
 */
export async function rotateSecret(
  tx: Queryable,
  deps: WebhookDeps,
  actor: Actor,
  id: string,
  body: { overlap_seconds?: number },
): Promise<q.SubscriptionRow & { signing_secret: string }> {
  const orgId = orgOf(actor);
  if (!(await q.findSubscription(tx, orgId, id, { forUpdate: true }))) throw notFound();
  const overlap = body.overlap_seconds ?? deps.config.secretOverlapSeconds;
  const secret = newSigningSecret();
  const row = await q.rotateSecret(tx, orgId, id, deps.secrets.seal(secret), overlap);
  await audit(tx, actor, orgId, 'webhook_subscription.secret_rotated', id, { overlap_seconds: overlap });
  return { ...row, signing_secret: secret };
}

export async function listDeliveryLog(
  tx: Queryable,
  actor: Actor,
  id: string,
  query: Record<string, unknown>,
): Promise<ListEnvelope<q.AttemptRow>> {
  const orgId = orgOf(actor);
  if (!(await q.findSubscription(tx, orgId, id))) throw notFound();
  const page = parsePagination(query);
  const sort = parseSort(query.sort, ATTEMPT_SORT, '-created_at', 'a.id');
  const created = parseDateRange(query, 'created_at');
  const str = (k: string) => (typeof query[k] === 'string' && query[k] ? (query[k] as string) : undefined);
  const deliveryId = str('delivery_id');
  if (deliveryId && !isUuid(deliveryId)) throw errors.queryValidation({ delivery_id: 'must be a UUID' });
  const filters = {
    created,
    ...(str('delivery_status') ? { deliveryStatus: str('delivery_status')! } : {}),
    ...(str('event_type') ? { eventType: str('event_type')! } : {}),
    ...(deliveryId ? { deliveryId } : {}),
  };
  const { rows, total } = await q.listAttempts(tx, orgId, id, filters, sort, page);
  return listEnvelope(rows, page, total);
}

/**
 * POST .../test: one real signed delivery of a `webhook.test` event, sent now, outside any transaction
 * (a slow endpoint must not hold a database connection for 10 s), then logged like any attempt. It goes
 * to this subscription only, whatever its event types and even when disabled: it is how an operator
 * checks an endpoint before re-enabling it.
 */
export async function sendTest(inTx: InTx, deps: WebhookDeps, actor: Actor, id: string) {
  const orgId = orgOf(actor);
  const { sealed, eventId, url } = await inTx(async (tx) => {
    const sub = await q.findSubscription(tx, orgId, id);
    if (!sub) throw notFound();
    return { sealed: await q.sealedSecrets(tx, orgId, id), eventId: await q.newEventId(tx), url: sub.url };
  });
  const data = { organization_id: orgId, subscription_id: id, message: 'This is a test delivery from the clinic platform.' };
  const signed = signDelivery(
    { id: eventId, type: 'webhook.test', data },
    sealed.map((s) => deps.secrets.open(s)),
  );
  const result = await deps.sender.send(url, signed);
  const deliveryId = await inTx(async (tx) => {
    const delivery = { id: await q.insertTestDelivery(tx, orgId, id, eventId), organization_id: orgId, subscription_id: id };
    await q.recordAttempts(tx, [{ d: delivery, attempt: 1, trigger: 'test', result, nextAttemptAt: null }]);
    await audit(tx, actor, orgId, 'webhook_subscription.tested', id, {
      event_id: eventId,
      status_code: result.statusCode,
      success: result.ok,
    });
    return delivery.id;
  });
  return {
    delivery_id: deliveryId,
    event_id: eventId,
    success: result.ok,
    status_code: result.statusCode,
    latency_ms: result.latencyMs,
    error: result.error,
    response_body: result.responseBody,
  };
}

/** Manual re-send of a failed delivery: flagged here, sent by the worker as the next attempt. */
export async function resendDelivery(tx: Queryable, actor: Actor, id: string, deliveryId: string) {
  const orgId = orgOf(actor);
  const sub = await q.findSubscription(tx, orgId, id);
  if (!sub) throw notFound();
  const d = await q.findDelivery(tx, orgId, id, deliveryId);
  if (!d) throw errors.notFound('No delivery with this id for this subscription.');
  if (d.event_type === 'webhook.test')
    throw errors.conflict('delivery_not_resendable', 'Test deliveries are not re-sent: send a new one with POST .../test.');
  if (d.status !== 'failed')
    throw errors.conflict('delivery_not_failed', `Only failed deliveries can be re-sent; this one is ${d.status}.`);
  if (sub.status !== 'active')
    throw errors.conflict('subscription_disabled', 'The subscription is disabled: re-enable it (PATCH status "active") before re-sending.');
  await q.requestResend(tx, deliveryId);
  await audit(tx, actor, orgId, 'webhook_delivery.resend_requested', id, { delivery_id: deliveryId, event_id: d.event_id });
  return { delivery_id: deliveryId, status: 'pending' as const, attempt: d.attempts + 1 };
}

export function eventTypes() {
  return EVENT_CATALOG.map((e) => ({ type: e.type, description: e.description, emitted_by: e.emittedBy, data: e.data }));
}
