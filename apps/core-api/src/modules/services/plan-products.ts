import { isUniqueViolation, type Queryable } from '@clinic/db';
import { errors, listEnvelope, parsePagination, parseSort } from '@clinic/http-kit';
import type { OrgActor } from '../../platform/actor.ts';
import { audit } from '../../platform/audit.ts';
import { emit } from '../events/emit.ts';
import * as q from './queries.ts';
import { PLAN_PRODUCTS, PLANS } from './resources.ts';
import { PLAN_PRODUCT_SORT } from './schemas.ts';
import { checkIds } from './service.ts';

/*
 * The products of a service plan (/v1/service-plans/{id}/products): added, re-counted and removed one at
 * a time. Each change locks the plan row, touches its updated_at, is audited on the plan
 * (`service_plan.product_added|product_updated|product_removed`) and emitted as `service_plan.updated`
 * with `changed: ["products"]`.
 */

const planNotFound = () => errors.notFound('No service plan with this id in this organization.');
const notInPlan = () => errors.notFound('This product is not in the plan.');

export async function listPlanProducts(tx: Queryable, orgId: string, planId: string, query: Record<string, unknown>) {
  if (!(await q.findRow(tx, PLANS.table, orgId, planId))) throw planNotFound();
  const page = parsePagination(query);
  const sort = parseSort(query.sort, PLAN_PRODUCT_SORT, '-created_at', 'l.product_id');
  const { rows, total } = await q.listPlanItems(tx, orgId, planId, sort, page);
  return listEnvelope(rows, page, total);
}

/** Locks the plan, runs the change, then touches the plan, audits and emits (unless the change was none). */
async function changePlan(
  tx: Queryable,
  actor: OrgActor,
  planId: string,
  action: string,
  change: () => Promise<Record<string, unknown> | null>,
): Promise<void> {
  if (!(await q.findRow(tx, PLANS.table, actor.orgId, planId, { forUpdate: true }))) throw planNotFound();
  const data = await change();
  if (!data) return;
  await q.touchRow(tx, PLANS.table, actor.orgId, planId);
  await audit(tx, actor, `service_plan.${action}`, 'service_plan', planId, data);
  await emit(tx, actor.orgId, 'service_plan.updated', { id: planId, changed: ['products'] });
}

export async function addPlanProduct(tx: Queryable, actor: OrgActor, planId: string, body: { product_id: string; quantity?: number }) {
  const productId = body.product_id.toLowerCase();
  const quantity = body.quantity ?? 1;
  await changePlan(tx, actor, planId, 'product_added', async () => {
    await checkIds(tx, actor.orgId, PLAN_PRODUCTS, [productId]);
    try {
      await q.insertPlanItem(tx, actor.orgId, planId, productId, quantity);
    } catch (err) {
      if (isUniqueViolation(err))
        throw errors.conflict('product_already_in_plan', 'The plan already includes this product; change its quantity instead.');
      throw err;
    }
    return { product_id: productId, quantity };
  });
  return (await q.findPlanItem(tx, actor.orgId, planId, productId))!;
}

export async function updatePlanProduct(tx: Queryable, actor: OrgActor, planId: string, productId: string, quantity: number) {
  await changePlan(tx, actor, planId, 'product_updated', async () => {
    const item = await q.findPlanItem(tx, actor.orgId, planId, productId);
    if (!item) throw notInPlan();
    if (item.quantity === quantity) return null;
    await q.setPlanItemQuantity(tx, actor.orgId, planId, productId, quantity);
    return { product_id: productId, quantity: { from: item.quantity, to: quantity } };
  });
  return (await q.findPlanItem(tx, actor.orgId, planId, productId))!;
}

export async function removePlanProduct(tx: Queryable, actor: OrgActor, planId: string, productId: string): Promise<void> {
  await changePlan(tx, actor, planId, 'product_removed', async () => {
    const removed = await q.deletePlanItem(tx, actor.orgId, planId, productId);
    if (removed === null) throw notInPlan();
    return { product_id: productId, quantity: removed };
  });
}
