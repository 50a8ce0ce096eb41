import type { SqlWhere } from '@clinic/http-kit';
import { linkColumn, type Link } from './queries.ts';
import type { Resource } from './service.ts';
import { PLAN_SORT, PRODUCT_SORT, SERVICE_SORT } from './schemas.ts';

/** The three catalog tables (migration 0060) as the shared CRUD of service.ts takes them. */

const serviceLinks: Link[] = [
  { field: 'location_ids', table: 'service_locations', parent: 'service_id', child: 'location_id', target: { table: 'locations' } },
  {
    field: 'specialist_ids',
    table: 'service_specialists',
    parent: 'service_id',
    child: 'specialist_id',
    target: { table: 'specialists', live: true },
  },
];

/** `?<key>=<uuid>`: rows linked to that id. */
function linkedTo(where: SqlWhere, l: Link, value: unknown): void {
  if (typeof value === 'string')
    where.add(
      `exists (select 1 from ${l.table} l where l.organization_id = t.organization_id and l.${l.parent} = t.id and l.${l.child} = ?)`,
      value,
    );
}

function publicFilter(where: SqlWhere, query: Record<string, unknown>): void {
  if (query.is_public === 'true' || query.is_public === 'false') where.add('t.is_public = ?', query.is_public === 'true');
}

export const SERVICES: Resource = {
  table: {
    name: 'services',
    entity: 'service',
    writable: [
      'name',
      'description',
      'duration_minutes',
      'buffer_before_minutes',
      'buffer_after_minutes',
      'price_minor',
      'currency',
      'mode',
      'min_notice_minutes',
      'max_days_ahead',
      'cancellation_window_minutes',
      'is_public',
      'slot_interval_minutes',
      'intake_form_template_id',
    ],
    extra: serviceLinks.map((l) => linkColumn(l)),
    taken: { code: 'service_name_taken', field: 'name' },
    inUse: { code: 'service_in_use', message: 'A service plan includes this service; take it out of the plan first.' },
    publicRows: true,
  },
  links: serviceLinks,
  sort: SERVICE_SORT,
  searched: ['name'],
  filter(where, query) {
    if (typeof query.mode === 'string') where.add('t.mode = ?', query.mode);
    linkedTo(where, serviceLinks[0]!, query.location_id);
    linkedTo(where, serviceLinks[1]!, query.specialist_id);
    publicFilter(where, query);
  },
};

export const PRODUCTS: Resource = {
  table: {
    name: 'products',
    entity: 'product',
    writable: ['name', 'sku', 'description', 'price_minor', 'currency'],
    extra: [],
    taken: { code: 'product_sku_taken', field: 'sku' },
    inUse: { code: 'product_in_use', message: 'A service plan includes this product; take it out of the plan first.' },
    publicRows: false,
  },
  links: [],
  sort: PRODUCT_SORT,
  searched: ['name', 'sku'],
};

/** A plan's link to services or products, with a quantity. */
const planLink = (field: string, target: 'services' | 'products'): Link => ({
  field,
  table: `service_plan_${target}`,
  parent: 'plan_id',
  child: `${target.slice(0, -1)}_id`,
  target: { table: target },
  quantity: true,
});
const planServices = planLink('services', 'services');
/** A plan's products: read-only on the plan, changed through /v1/service-plans/{id}/products. */
export const PLAN_PRODUCTS = planLink('product_id', 'products');

export const PLANS: Resource = {
  table: {
    name: 'service_plans',
    entity: 'service_plan',
    writable: ['name', 'description', 'price_minor', 'currency', 'validity_days', 'is_public'],
    extra: [linkColumn(planServices), linkColumn(PLAN_PRODUCTS, 'products')],
    taken: { code: 'service_plan_name_taken', field: 'name' },
    inUse: { code: 'service_plan_in_use', message: 'This service plan is in use.' },
    publicRows: true,
  },
  links: [planServices],
  sort: PLAN_SORT,
  searched: ['name'],
  filter: publicFilter,
};
