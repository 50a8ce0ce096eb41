import { DataOf, ErrorResponse, errors, ListOf } from '@clinic/http-kit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type, type TObject, type TSchema } from 'typebox';
import { requirePermission } from '../../platform/gates.ts';
import { hasPermission, type RequestContext } from '../../platform/identity/context.ts';
import { contextOf, errorSchemas, orgActorOf, orgIdOf, routesOf } from '../../platform/route.ts';
import { isPatientCaller } from '../../platform/identity/context.ts';
import * as plan from './plan-products.ts';
import { PLANS, PRODUCTS, SERVICES } from './resources.ts';
import * as s from './schemas.ts';
import { createEntry, deleteEntry, getEntry, listEntries, updateEntry, type Body, type Resource } from './service.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 409, 429);
const manage = requirePermission('services.manage');
const WRITE_NOTE = 'Needs services.manage.';
type Gate = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

// Reads (migration 0060): services.view_org or services.manage; the organization's patients read public
// services and plans (the portal's booking and purchase pages), never products.
const catalogReader = (ctx: RequestContext) => hasPermission(ctx, 'services.view_org') || hasPermission(ctx, 'services.manage');
const readGate =
  (patients: boolean): Gate =>
  async (request) => {
    const ctx = contextOf(request);
    if (!catalogReader(ctx) && !(patients && isPatientCaller(ctx)))
      throw errors.forbidden('This needs the services.view_org or services.manage permission in the organization.');
  };
/** A caller that passed the read gate without a catalog permission is a patient: public rows only. */
const publicOnly = (request: FastifyRequest) => !catalogReader(contextOf(request));

interface Crud {
  path: string;
  /** The operation ids' noun: Service gives listServices, createService, getService, updateService, deleteService. */
  noun: string;
  resource: Resource;
  schemas: { row: TSchema; create: TSchema; update: TSchema; list: TObject };
  /** What the create, update and delete descriptions add to the permission. */
  notes: [create: string, update: string, remove: string];
  /** Body fields holding ids of the organization's rows (platform/references.ts), on create and update. */
  references?: Record<string, string>;
}

/** The five routes of one catalog resource: GET and POST on the collection; GET, PATCH and DELETE on /{id}. */
function crudRoutes(app: FastifyInstance, c: Crud): void {
  const [listId, createId, getId, updateId, deleteId] = ['list', 'create', 'get', 'update', 'delete'].map(
    (verb) => `${verb}${c.noun}${verb === 'list' ? 's' : ''}`,
  );
  const tag = c.path.slice('/v1/'.length);
  const what = `a ${c.resource.table.entity.replace('_', ' ')}`;
  // Patients read the resources that have public rows (services, plans), never the others (products).
  const patients = c.resource.table.publicRows;
  const read = readGate(patients);
  const readNote = patients
    ? "services.view_org or services.manage; the organization's patients see public ones only (others are 404)."
    : 'services.view_org or services.manage (staff only: patients get 403).';
  const filters = Object.keys(c.schemas.list.properties).filter((k) => !['page', 'limit', 'sort'].includes(k));
  const [createNote, updateNote, deleteNote] = c.notes;
  const r = routesOf(app, { tags: [tag], errors: errorResponses });
  const one = `${c.path}/:id`;
  const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;

  r.get(
    c.path,
    {
      onRequest: [read],
      schema: {
        operationId: listId,
        summary: `List the ${tag.replace('-', ' ')} of the organization`,
        description: `${readNote} Pagination, sort (${Object.keys(c.resource.sort).join(', ')}; newest first by default), ${filters.join(', ')}.`,
        querystring: c.schemas.list,
        response: { 200: ListOf(c.schemas.row), 422: ErrorResponse },
      },
    },
    async (request) =>
      request.inTx((tx) => listEntries(tx, orgIdOf(request), c.resource, request.query as Record<string, unknown>, publicOnly(request))),
  );

  r.post(
    c.path,
    {
      config: { idempotent: true, references: c.references },
      onRequest: [manage],
      schema: {
        operationId: createId,
        summary: `Create ${what}`,
        description: `${WRITE_NOTE} ${createNote} Honours Idempotency-Key.`,
        body: c.schemas.create,
        response: { 201: DataOf(c.schemas.row) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      return reply.status(201).send({ data: await request.inTx((tx) => createEntry(tx, actor, c.resource, request.body as Body)) });
    },
  );

  r.get(
    one,
    {
      onRequest: [read],
      schema: {
        operationId: getId,
        summary: `Read ${what}`,
        description: readNote,
        params: s.IdParams,
        response: { 200: DataOf(c.schemas.row) },
      },
    },
    async (request) => ({
      data: await request.inTx((tx) => getEntry(tx, orgIdOf(request), c.resource, idOf(request), publicOnly(request))),
    }),
  );

  r.patch(
    one,
    {
      config: { references: c.references && { ':id': c.resource.table.name, ...c.references } },
      onRequest: [manage],
      schema: {
        operationId: updateId,
        summary: `Change some fields of ${what}`,
        description: `${WRITE_NOTE} ${updateNote}`,
        params: s.IdParams,
        body: c.schemas.update,
        response: { 200: DataOf(c.schemas.row) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => updateEntry(tx, actor, c.resource, idOf(request), request.body as Body)) };
    },
  );

  r.delete(
    one,
    {
      onRequest: [manage],
      schema: {
        operationId: deleteId,
        summary: `Delete ${what}`,
        description: `${WRITE_NOTE} ${deleteNote}`,
        params: s.IdParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      await request.inTx((tx) => deleteEntry(tx, actor, c.resource, idOf(request)));
      return reply.status(204).send(null);
    },
  );
}

const MONEY = 'price_minor is an integer of minor units; currency an ISO 4217 code (either case in, upper case out).';

/** The service catalog (spec 4.5): services, service plans, products and the products of a plan. */
export function serviceCatalogRoutes(app: FastifyInstance): void {
  crudRoutes(app, {
    path: '/v1/services',
    noun: 'Service',
    resource: SERVICES,
    schemas: s.SERVICE,
    references: { intake_form_template_id: 'form_templates', 'location_ids[]': 'locations', 'specialist_ids[]': 'specialists' },
    notes: [
      `${MONEY} location_ids must name locations of the organization and specialist_ids its live specialists (400 otherwise). 409 service_name_taken.`,
      'Send only the fields to change; location_ids and specialist_ids replace the whole set. 409 service_name_taken.',
      'Its location and specialist links go with it. 409 service_in_use while a service plan includes it.',
    ],
  });
  crudRoutes(app, {
    path: '/v1/products',
    noun: 'Product',
    resource: PRODUCTS,
    schemas: s.PRODUCT,
    notes: [
      `${MONEY} The SKU is stored upper case and unique in the organization: 409 product_sku_taken.`,
      'Send only the fields to change. 409 product_sku_taken.',
      '409 product_in_use while a service plan includes it.',
    ],
  });
  crudRoutes(app, {
    path: '/v1/service-plans',
    noun: 'ServicePlan',
    resource: PLANS,
    schemas: s.SERVICE_PLAN,
    references: { 'services[].service_id': 'services' },
    notes: [
      `${MONEY} services bundles services of the organization with quantities (400 fields.services otherwise). 409 service_plan_name_taken.`,
      'Send only the fields to change; services replaces the whole list. Products change through /v1/service-plans/{id}/products.',
      'Its service and product entries go with it.',
    ],
  });
  planProductRoutes(app);
}

/** /v1/service-plans/{id}/products (+ /{pid}): staff read them; services.manage changes them. */
function planProductRoutes(app: FastifyInstance): void {
  const r = routesOf(app, { tags: ['service-plans'], errors: errorResponses });
  const read = readGate(false);
  type Params = { id: string; pid: string };
  const path = '/v1/service-plans/:id/products';

  r.get(
    path,
    {
      onRequest: [read],
      schema: {
        operationId: 'listServicePlanProducts',
        summary: 'List the products of a service plan',
        description: 'services.view_org or services.manage. Pagination, sort (name, sku, quantity, created_at; newest first by default).',
        params: s.IdParams,
        querystring: s.PlanProductListQuery,
        response: { 200: ListOf(s.PlanProduct), 422: ErrorResponse },
      },
    },
    async (request) =>
      request.inTx((tx) =>
        plan.listPlanProducts(tx, orgIdOf(request), (request.params as Params).id, request.query as Record<string, unknown>),
      ),
  );

  r.post(
    path,
    {
      config: { references: { ':id': 'service_plans', product_id: 'products' }, idempotent: true },
      onRequest: [manage],
      schema: {
        operationId: 'addServicePlanProduct',
        summary: 'Add a product to a service plan',
        description: `${WRITE_NOTE} quantity defaults to 1. 400 fields.product_id for a product not of the organization; 409 product_already_in_plan. Honours Idempotency-Key.`,
        params: s.IdParams,
        body: s.AddPlanProductBody,
        response: { 201: DataOf(s.PlanProduct) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      const body = request.body as { product_id: string; quantity?: number };
      return reply
        .status(201)
        .send({ data: await request.inTx((tx) => plan.addPlanProduct(tx, actor, (request.params as Params).id, body)) });
    },
  );

  r.patch(
    `${path}/:pid`,
    {
      onRequest: [manage],
      schema: {
        operationId: 'updateServicePlanProduct',
        summary: 'Change how many of a product a service plan includes',
        description: `${WRITE_NOTE} 404 when the product is not in the plan.`,
        params: s.PlanProductParams,
        body: s.UpdatePlanProductBody,
        response: { 200: DataOf(s.PlanProduct) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      const { id, pid } = request.params as Params;
      const { quantity } = request.body as { quantity: number };
      return { data: await request.inTx((tx) => plan.updatePlanProduct(tx, actor, id, pid, quantity)) };
    },
  );

  r.delete(
    `${path}/:pid`,
    {
      onRequest: [manage],
      schema: {
        operationId: 'removeServicePlanProduct',
        summary: 'Take a product out of a service plan',
        description: `${WRITE_NOTE} 404 when the product is not in the plan.`,
        params: s.PlanProductParams,
        response: { 204: Type.Null({ description: 'Removed' }) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      const { id, pid } = request.params as Params;
      await request.inTx((tx) => plan.removePlanProduct(tx, actor, id, pid));
      return reply.status(204).send(null);
    },
  );
}
