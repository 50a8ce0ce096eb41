import { parsePicker, PickerOf, PickerQuery, pickerEnvelope, Uuid, nullable } from '@clinic/http-kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { errors } from '@clinic/http-kit';
import { hasPermission, isPatientCaller, type RequestContext } from '../../platform/identity/context.ts';
import { contextOf, errorSchemas, orgIdOf, routesOf } from '../../platform/route.ts';
import { pick, type PickerSource } from './queries.ts';

const PickerItem = Type.Object(
  {
    id: Uuid,
    label: Type.String({ description: 'What the picker shows.' }),
    detail: nullable(Type.String({ description: 'A second line: email, title, code or SKU.' })),
  },
  { $id: 'PickerItem' },
);

interface PickerRoute {
  path: string;
  operationId: string;
  what: string;
  /** Who may pick (row policies then decide which rows). */
  may: (ctx: RequestContext) => boolean;
  mayText: string;
  source: PickerSource;
}

const any =
  (...codes: string[]) =>
  (ctx: RequestContext) =>
    codes.some((c) => hasPermission(ctx, c));
const catalogOrPatient = (ctx: RequestContext) => any('services.view_org', 'services.manage')(ctx) || isPatientCaller(ctx);

/** The typeahead of each clinical resource (spec 4.1 pickers), over the organization in scope. */
const PICKERS: PickerRoute[] = [
  {
    path: '/v1/patients/picker',
    operationId: 'pickPatients',
    what: 'patients (name, email or phone)',
    may: any('patients.view_org', 'patients.view'),
    mayText: 'patients.view_org',
    source: {
      table: 'patients',
      live: 't.deleted_at is null',
      label: "coalesce(nullif(btrim(concat_ws(' ', t.first_name, t.last_name)), ''), app.patient_email(t.id), '')",
      detail: 'app.patient_email(t.id)',
      // The trigram index, through the search function (LIKE is not leakproof under row-level security).
      match: (pattern, orgId) => ['t.id in (select app.patient_search(?, ?))', orgId, pattern],
      order: 'lower(t.last_name), lower(t.first_name)',
    },
  },
  {
    path: '/v1/specialists/picker',
    operationId: 'pickSpecialists',
    what: 'specialists (name or title)',
    may: (ctx) => any('specialists.view')(ctx) || isPatientCaller(ctx),
    mayText: 'specialists.view, or a patient of the organization',
    source: {
      table: 'specialists',
      live: 't.deleted_at is null',
      label: 't.display_name',
      detail: 't.title',
      match: (p) => ['(t.display_name ilike ? or t.title ilike ?)', p, p],
      order: 'lower(t.display_name)',
    },
  },
  {
    path: '/v1/specialties/picker',
    operationId: 'pickSpecialties',
    what: 'specialties (name or code)',
    may: (ctx) => ctx.isSuperadmin || ctx.isStaff || ctx.isPatient,
    mayText: 'anyone with access to the organization',
    source: {
      table: 'specialties',
      live: 'true',
      label: 't.name',
      detail: 't.code',
      match: (p) => ['(t.name ilike ? or t.code ilike ?)', p, p],
      order: 'lower(t.name)',
    },
  },
  {
    path: '/v1/services/picker',
    operationId: 'pickServices',
    what: 'services (name)',
    may: catalogOrPatient,
    mayText: 'services.view_org or services.manage; patients pick public services',
    source: {
      table: 'services',
      live: 'true',
      label: 't.name',
      detail: 't.mode',
      match: (p) => ['t.name ilike ?', p],
      order: 'lower(t.name)',
    },
  },
  {
    path: '/v1/service-plans/picker',
    operationId: 'pickServicePlans',
    what: 'service plans (name)',
    may: catalogOrPatient,
    mayText: 'services.view_org or services.manage; patients pick public plans',
    source: {
      table: 'service_plans',
      live: 'true',
      label: 't.name',
      detail: 'null',
      match: (p) => ['t.name ilike ?', p],
      order: 'lower(t.name)',
    },
  },
  {
    path: '/v1/products/picker',
    operationId: 'pickProducts',
    what: 'products (name or SKU)',
    may: any('services.view_org', 'services.manage'),
    mayText: 'services.view_org or services.manage',
    source: {
      table: 'products',
      live: 'true',
      label: 't.name',
      detail: 't.sku',
      match: (p) => ['(t.name ilike ? or t.sku ilike ?)', p, p],
      order: 'lower(t.name)',
    },
  },
];

export function pickerRoutes(app: FastifyInstance): void {
  const r = routesOf(app, { tags: ['pickers'], errors: errorSchemas(400, 401, 403, 422, 429) });
  for (const p of PICKERS) {
    const gate = async (request: FastifyRequest) => {
      if (!p.may(contextOf(request))) throw errors.forbidden(`Picking ${p.what.split(' ')[0]} needs ${p.mayText}.`);
    };
    r.get(
      p.path,
      {
        onRequest: [gate],
        schema: {
          operationId: p.operationId,
          summary: `Typeahead over the ${p.what} of the organization in scope`,
          description: `${p.mayText}. Picker (spec 4.1): q is a trimmed, case-insensitive substring; ids (comma-separated uuids, invalid ones dropped) wins over q; limit defaults to 20 and clamps to 50; no pagination. Row policies decide which rows (a patient sees public services only).`,
          querystring: PickerQuery,
          response: { 200: PickerOf(PickerItem) },
        },
      },
      async (request) =>
        pickerEnvelope(
          await request.inTx((tx) => pick(tx, p.source, orgIdOf(request), parsePicker(request.query as Record<string, unknown>))),
        ),
    );
  }
}
