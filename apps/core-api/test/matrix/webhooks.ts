import type { Fixture, Fragment, Row } from './types.ts';

/*
 * Webhook subscriptions (spec 4.9: "all need admin rights"). Migration 0013 adds webhooks.manage and
 * grants it to the admin template only; a superadmin passes every permission check and names the
 * organization with X-Organization-ID. Everyone else: 403.
 * Fixtures are written straight into the database where a cell needs one: a subscription on a
 * documentation address (192.0.2.1, TEST-NET-1), which the SSRF guard refuses before any packet leaves,
 * so the test delivery answers at once (200 with success false), and failed deliveries to re-send.
 */
const admin = (status: number): Row => ({
  admin: status,
  specialist: 403,
  customer_support: 403,
  patient: 403,
  non_member: 403,
  other_org_admin: 403,
  superadmin: status,
  anonymous: 401,
});
const scoped = (f: Fixture) => ({ headers: { 'x-organization-id': f.orgId } });

async function freshSubscription(f: Fixture): Promise<string> {
  const { rows } = await f.t.db.query<{ id: string }>(
    `insert into webhook_subscriptions (organization_id, url, event_types, secret_sealed)
     values ($1, 'https://192.0.2.1/hook', '{organization.updated}', $2) returning id`,
    [f.orgId, f.t.rt.secrets.seal('whsec_bWF0cml4LXNlY3JldC1tYXRyaXgtc2VjcmV0')],
  );
  return rows[0]!.id;
}

let shared: string | null = null;
const sharedSubscription = async (f: Fixture) => (shared ??= await freshSubscription(f));

async function failedDelivery(f: Fixture): Promise<{ uid: string; deliveryId: string }> {
  const uid = await sharedSubscription(f);
  const { rows } = await f.t.db.query<{ id: string }>(
    `insert into webhook_deliveries (organization_id, subscription_id, event_id, event_type, status, attempts)
     values ($1, $2, app.uuid_v7(), 'organization.updated', 'failed', 3) returning id`,
    [f.orgId, uid],
  );
  return { uid, deliveryId: rows[0]!.id };
}

const SUB = '/v1/webhook-subscriptions/{uid}';

export const entries: Fragment = {
  listWebhookEventTypes: { row: admin(200), request: { method: 'GET', path: '/v1/webhook-event-types', prepare: scoped } },
  listWebhookSubscriptions: { row: admin(200), request: { method: 'GET', path: '/v1/webhook-subscriptions', prepare: scoped } },
  createWebhookSubscription: {
    row: admin(201),
    request: {
      method: 'POST',
      path: '/v1/webhook-subscriptions',
      // A public address literal: creation resolves nothing and connects to nothing.
      prepare: (f) => ({ ...scoped(f), body: { url: 'https://8.8.8.8/matrix', event_types: ['organization.updated'] } }),
    },
  },
  getWebhookSubscription: {
    row: admin(200),
    request: { method: 'GET', path: SUB, prepare: async (f) => ({ ...scoped(f), params: { uid: await sharedSubscription(f) } }) },
  },
  updateWebhookSubscription: {
    row: admin(200),
    request: {
      method: 'PATCH',
      path: SUB,
      prepare: async (f) => ({ ...scoped(f), params: { uid: await sharedSubscription(f) }, body: { description: `matrix ${Date.now()}` } }),
    },
  },
  deleteWebhookSubscription: {
    row: admin(204),
    request: { method: 'DELETE', path: SUB, prepare: async (f) => ({ ...scoped(f), params: { uid: await freshSubscription(f) } }) },
  },
  listWebhookDeliveries: {
    row: admin(200),
    request: {
      method: 'GET',
      path: `${SUB}/events`,
      prepare: async (f) => ({ ...scoped(f), params: { uid: await sharedSubscription(f) } }),
    },
  },
  testWebhookSubscription: {
    row: admin(200),
    request: {
      method: 'POST',
      path: `${SUB}/test`,
      prepare: async (f) => ({ ...scoped(f), params: { uid: await sharedSubscription(f) } }),
    },
  },
  rotateWebhookSecret: {
    row: admin(200),
    request: {
      method: 'POST',
      path: `${SUB}/rotate-secret`,
      prepare: async (f) => ({ ...scoped(f), params: { uid: await freshSubscription(f) }, body: {} }),
    },
  },
  resendWebhookDelivery: {
    row: admin(202),
    request: {
      method: 'POST',
      path: `${SUB}/deliveries/{deliveryId}/resend`,
      prepare: async (f) => {
        const { uid, deliveryId } = await failedDelivery(f);
        return { ...scoped(f), params: { uid, deliveryId } };
      },
    },
  },
};
