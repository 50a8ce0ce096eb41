import { DateRangeQuery, ListQueryWith, SortParam, Timestamp, Uuid, nullable } from '@clinic/http-kit';
import { Type, type TSchema } from 'typebox';

/*
 * The service catalog's shapes (spec 4.5 "Service catalog"; docs/decisions.md "Service catalog"). Money is
 * an integer of minor units beside its ISO 4217 currency, never a float. Lengths and ranges match the
 * checks of migration 0060.
 */

/** Public sort fields -> SQL (`t` is the listed table). Names sort case-insensitively. */
export const SERVICE_SORT = {
  name: 'lower(t.name)',
  created_at: 't.created_at',
  price_minor: 't.price_minor',
  duration_minutes: 't.duration_minutes',
} as const;
export const PRODUCT_SORT = { name: 'lower(t.name)', sku: 't.sku', created_at: 't.created_at', price_minor: 't.price_minor' } as const;
export const PLAN_SORT = {
  name: 'lower(t.name)',
  created_at: 't.created_at',
  price_minor: 't.price_minor',
  validity_days: 't.validity_days',
} as const;
export const PLAN_PRODUCT_SORT = { name: 'lower(p.name)', sku: 'p.sku', quantity: 'l.quantity', created_at: 'l.created_at' } as const;

const Minutes = (max: number, description: string) => Type.Integer({ minimum: 0, maximum: max, description });
const Quantity = Type.Integer({ minimum: 1, maximum: 1000, description: 'How many, 1 to 1000.' });
const Mode = Type.Union([Type.Literal('in_person'), Type.Literal('video'), Type.Literal('phone')], {
  description: 'How the service is delivered.',
});

// Fields every catalog entry has: a name unique in the organization, a description, a price.
const common = {
  name: Type.String({ minLength: 1, maxLength: 200, description: 'Trimmed; unique in the organization (case-insensitive).' }),
  description: nullable(Type.String({ maxLength: 5000, description: 'null or an empty string clears it.' })),
  price_minor: Type.Integer({
    minimum: 0,
    maximum: 2_147_483_647,
    description: 'Price in minor units of the currency (15000 is 150.00 RON): an integer, never a float.',
    examples: [15000],
  }),
  currency: Type.String({
    minLength: 3,
    maxLength: 3,
    description: 'ISO 4217 code such as RON or EUR; either case in, upper case out.',
    examples: ['RON'],
  }),
};
const stored = { id: Uuid, organization_id: Uuid, created_at: Timestamp, updated_at: Timestamp };
const Visibility = Type.Optional(
  Type.Union([Type.Literal('true'), Type.Literal('false')], { description: 'Public ones only, or private ones only.' }),
);

/**
 * The four schemas of one catalog resource, from its writable fields: the row (fields plus id,
 * organization, timestamps and read-only extras), the create body (`required` fields required), the
 * PATCH body (every field optional) and the list query (sort allow-list, q, filters, created_at range).
 */
function catalogSchemas(o: {
  id: string;
  fields: Record<string, TSchema>;
  required: string[];
  readOnly?: Record<string, TSchema>;
  updateNote: string;
  sort: Readonly<Record<string, string>>;
  q: string;
  filters?: Record<string, TSchema>;
}) {
  const entries = Object.entries(o.fields);
  return {
    row: Type.Object(
      {
        ...stored,
        ...o.fields,
        description: nullable(Type.String()),
        currency: Type.String({ description: 'ISO 4217, upper case.' }),
        ...o.readOnly,
      },
      { $id: o.id },
    ),
    create: Type.Object(Object.fromEntries(entries.map(([k, v]) => [k, o.required.includes(k) ? v : Type.Optional(v)])), {
      additionalProperties: false,
    }),
    update: Type.Object(Object.fromEntries(entries.map(([k, v]) => [k, Type.Optional(v)])), {
      additionalProperties: false,
      description: o.updateNote,
    }),
    list: ListQueryWith({
      sort: SortParam(o.sort),
      q: Type.Optional(Type.String({ maxLength: 200, description: `Case-insensitive substring of ${o.q}.` })),
      ...o.filters,
      ...DateRangeQuery('created_at'),
    }),
  };
}

export const SERVICE = catalogSchemas({
  id: 'Service',
  fields: {
    ...common,
    duration_minutes: Type.Integer({ minimum: 5, maximum: 1440, description: 'Length of one appointment, 5 to 1440 minutes.' }),
    buffer_before_minutes: Minutes(240, 'Time kept free before each appointment (default 0).'),
    buffer_after_minutes: Minutes(240, 'Time kept free after each appointment (default 0).'),
    mode: Mode,
    location_ids: Type.Array(Uuid, {
      maxItems: 200,
      description: 'Locations of the organization where it is delivered; replaces the whole set when given.',
    }),
    specialist_ids: Type.Array(Uuid, {
      maxItems: 500,
      description: 'Live specialists of the organization who deliver it; replaces the whole set when given.',
    }),
    min_notice_minutes: Minutes(525_600, 'Booking rule: how long before the start a booking may be made at the latest (default 0).'),
    max_days_ahead: Type.Integer({
      minimum: 1,
      maximum: 730,
      description: 'Booking rule: how many days ahead it may be booked (default 90).',
    }),
    cancellation_window_minutes: Minutes(525_600, 'Booking rule: a patient may cancel until this long before the start (default 0).'),
    is_public: Type.Boolean({ description: "Shown to the organization's patients (booking pages); default false." }),
    intake_form_template_id: nullable(Uuid, {
      description: 'A form template whose questions a booking of this service answers (its intake); null: none.',
    }),
    slot_interval_minutes: nullable(
      Type.Integer({
        minimum: 5,
        maximum: 240,
        description: 'Booking grid: slots start at multiples of this many minutes after local midnight (null: every 15 minutes).',
      }),
    ),
  },
  required: ['name', 'duration_minutes', 'price_minor', 'currency', 'mode'],
  updateNote: 'Only the fields to change; location_ids and specialist_ids replace the whole set.',
  sort: SERVICE_SORT,
  q: 'the name',
  filters: { mode: Type.Optional(Mode), location_id: Type.Optional(Uuid), specialist_id: Type.Optional(Uuid), is_public: Visibility },
});

export const PRODUCT = catalogSchemas({
  id: 'Product',
  fields: {
    ...common,
    name: Type.String({ minLength: 1, maxLength: 200, description: 'Trimmed.' }),
    sku: Type.String({
      minLength: 1,
      maxLength: 64,
      description:
        'Stock-keeping unit, unique in the organization: letters, digits, ".", "_" and "-", starting with a letter or digit; stored upper case.',
      examples: ['BRACE-M'],
    }),
  },
  required: ['name', 'sku', 'price_minor', 'currency'],
  updateNote: 'Only the fields to change.',
  sort: PRODUCT_SORT,
  q: 'the name or the SKU',
});

export const SERVICE_PLAN = catalogSchemas({
  id: 'ServicePlan',
  fields: {
    ...common,
    validity_days: Type.Integer({ minimum: 1, maximum: 3660, description: 'Days the plan can be used from its purchase.' }),
    is_public: Type.Boolean({ description: "Offered to the organization's patients; default false." }),
    services: Type.Array(Type.Object({ service_id: Uuid, quantity: Quantity }, { additionalProperties: false }), {
      maxItems: 100,
      description: 'The services it bundles, each once, with how many; replaces the whole list when given.',
    }),
  },
  required: ['name', 'price_minor', 'currency', 'validity_days'],
  readOnly: {
    products: Type.Array(Type.Object({ product_id: Uuid, quantity: Type.Integer() }), {
      description: 'Read-only here: changed through /v1/service-plans/{id}/products.',
    }),
  },
  updateNote: 'Only the fields to change; services replaces the whole list.',
  sort: PLAN_SORT,
  q: 'the name',
  filters: { is_public: Visibility },
});

// The products of a plan.
export const PlanProduct = Type.Object(
  {
    product_id: Uuid,
    name: Type.String(),
    sku: Type.String(),
    price_minor: Type.Integer(),
    currency: Type.String(),
    quantity: Type.Integer(),
    created_at: Timestamp,
  },
  { $id: 'ServicePlanProduct', description: 'A product in a plan, with how many the plan includes.' },
);
export const AddPlanProductBody = Type.Object({ product_id: Uuid, quantity: Type.Optional(Quantity) }, { additionalProperties: false });
export const UpdatePlanProductBody = Type.Object({ quantity: Quantity }, { additionalProperties: false });
export const PlanProductListQuery = ListQueryWith({ sort: SortParam(PLAN_PRODUCT_SORT) });

export const IdParams = Type.Object({ id: Uuid });
export const PlanProductParams = Type.Object({ id: Uuid, pid: Uuid });
