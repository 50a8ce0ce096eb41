import { randomBytes } from 'node:crypto';
import { CALLERS, type Fixture, type Fragment, type Prepared, type Row } from './types.ts';

/*
 * The service catalog (spec 4.5 "Service catalog"). Every request names the organization in
 * X-Organization-ID. Default grants (migration 0060): services.view_org and services.manage for admin,
 * services.view_org for specialist and customer_support. Reads need either code; the organization's
 * patients read public services and plans (the cells target public ones, so 200) but never products
 * (403, also for a plan's product list). Writes need services.manage. Callers outside the
 * organization are 403 (no membership, no patient link).
 */

const hex = () => randomBytes(5).toString('hex');
const as = (f: Fixture, p: Prepared = {}): Prepared => ({ ...p, headers: { 'x-organization-id': f.orgId, ...p.headers } });
const row = (r: Partial<Row>): Row => ({ ...(Object.fromEntries(CALLERS.map((c) => [c, c === 'anonymous' ? 401 : 403])) as Row), ...r });
const staffRead = { admin: 200, specialist: 200, customer_support: 200, superadmin: 200 };
const publicRead = { ...staffRead, patient: 200 };

/** A new catalog entry, created by the superadmin; returns its id. */
async function fresh(f: Fixture, path: string, body: Record<string, unknown>): Promise<string> {
  const res = await f.t.call('POST', path, { token: f.tokens.superadmin, org: f.orgId, body });
  if (res.statusCode !== 201) throw new Error(`fixture ${path}: ${res.statusCode} ${res.body}`);
  return res.json().data.id as string;
}
/** A valid create body of each resource (services and plans public, so the patient cells read them). */
const BODIES: Record<string, () => Record<string, unknown>> = {
  '/v1/services': () => ({
    name: `Matrix ${hex()}`,
    duration_minutes: 30,
    price_minor: 5000,
    currency: 'RON',
    mode: 'video',
    is_public: true,
  }),
  '/v1/products': () => ({ name: `Matrix ${hex()}`, sku: `m-${hex()}`, price_minor: 900, currency: 'eur' }),
  '/v1/service-plans': () => ({ name: `Matrix ${hex()}`, price_minor: 20000, currency: 'RON', validity_days: 30, is_public: true }),
};
const freshOf = (path: string) => (f: Fixture) => fresh(f, path, BODIES[path]!());
const freshService = freshOf('/v1/services');
const freshProduct = freshOf('/v1/products');
const freshPlan = freshOf('/v1/service-plans');
/** A fresh plan holding a fresh product: `{ id, pid }`. */
async function freshPlanProduct(f: Fixture): Promise<{ id: string; pid: string }> {
  const [id, pid] = await Promise.all([freshPlan(f), freshProduct(f)]);
  await fresh(f, `/v1/service-plans/${id}/products`, { product_id: pid, quantity: 1 });
  return { id, pid };
}

const shared = new WeakMap<
  Fixture,
  { service: Promise<string>; product: Promise<string>; planProduct: Promise<{ id: string; pid: string }> }
>();
function sharedOf(f: Fixture) {
  let s = shared.get(f);
  if (!s) {
    s = { service: freshService(f), product: freshProduct(f), planProduct: freshPlanProduct(f) };
    shared.set(f, s);
  }
  return s;
}

/** The five operations of one catalog resource: `noun` as in its operation ids (listServices, createService, ...). */
function crud(noun: string, path: string, read: Partial<Row>, shared: (f: Fixture) => Promise<string>): Fragment {
  const one = `${path}/{id}`;
  const prepare =
    (id: (f: Fixture) => Promise<string>, extra: Prepared = {}) =>
    async (f: Fixture) =>
      as(f, { params: { id: await id(f) }, ...extra });
  return {
    [`list${noun}s`]: { row: row(read), request: { method: 'GET', path, prepare: (f) => as(f) } },
    [`create${noun}`]: {
      row: row({ admin: 201, superadmin: 201 }),
      request: { method: 'POST', path, prepare: (f) => as(f, { body: BODIES[path]!() }) },
    },
    [`get${noun}`]: { row: row(read), request: { method: 'GET', path: one, prepare: prepare(shared) } },
    [`update${noun}`]: {
      row: row({ admin: 200, superadmin: 200 }),
      request: { method: 'PATCH', path: one, prepare: prepare(shared, { body: { description: `Changed ${hex()}` } }) },
    },
    [`delete${noun}`]: {
      row: row({ admin: 204, superadmin: 204 }),
      request: { method: 'DELETE', path: one, prepare: prepare(freshOf(path)) },
    },
  };
}

export const entries: Fragment = {
  ...crud('Service', '/v1/services', publicRead, (f) => sharedOf(f).service),
  ...crud('Product', '/v1/products', staffRead, (f) => sharedOf(f).product),
  ...crud('ServicePlan', '/v1/service-plans', publicRead, async (f) => (await sharedOf(f).planProduct).id),

  listServicePlanProducts: {
    row: row(staffRead),
    request: {
      method: 'GET',
      path: '/v1/service-plans/{id}/products',
      prepare: async (f) => as(f, { params: { id: (await sharedOf(f).planProduct).id } }),
    },
  },
  addServicePlanProduct: {
    row: row({ admin: 201, superadmin: 201 }),
    request: {
      method: 'POST',
      path: '/v1/service-plans/{id}/products',
      prepare: async (f) =>
        as(f, { params: { id: (await sharedOf(f).planProduct).id }, body: { product_id: await freshProduct(f), quantity: 2 } }),
    },
  },
  updateServicePlanProduct: {
    row: row({ admin: 200, superadmin: 200 }),
    request: {
      method: 'PATCH',
      path: '/v1/service-plans/{id}/products/{pid}',
      prepare: async (f) => as(f, { params: await sharedOf(f).planProduct, body: { quantity: 2 + Math.floor(Math.random() * 900) } }),
    },
  },
  removeServicePlanProduct: {
    row: row({ admin: 204, superadmin: 204 }),
    request: {
      method: 'DELETE',
      path: '/v1/service-plans/{id}/products/{pid}',
      prepare: async (f) => as(f, { params: await freshPlanProduct(f) }),
    },
  },
};
