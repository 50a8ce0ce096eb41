import type { Queryable } from '@clinic/db';
import { NIL_UUID } from '@clinic/db';
import { errors, isUuid } from '@clinic/http-kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Body fields that hold ids of the organization's rows, by path (`patient_id`, `fields[].custom_field_id`,
     * `trigger.service_ids[]`: `[]` walks an array), each with its table (`table`, `table.column` when the id is
     * not the row's `id`, `?shared` when the platform's rows without organization are the organization's to use
     * too). An id that names no row of the organization in scope is refused with 400 validation_error naming the
     * field, before the handler's own work. A `:param` key names the path parameter's table: when the path names
     * no row of the organization the check stands aside, so that the route answers 404 for its parent first.
     */
    references?: Record<string, string>;
    /** The route's service checks its references itself (referenceProblems), to name them with its other problems. */
    referencesInService?: boolean;
  }
}

/** Every route's declared references, by `METHOD /path` as in the OpenAPI document (tests walk it). */
export const DECLARED_REFERENCES = new Map<string, Record<string, string>>();

interface Ref {
  field: string;
  target: string;
  id: string;
  /** A path parameter: when it does not resolve, the route's own 404 comes first. */
  parent?: boolean;
}
const pending = new WeakMap<FastifyRequest, { orgId: string; refs: Ref[] }>();

/**
 * The ids at `pattern` in `value`, each with the field to name: the indexed path (`fields.2.custom_field_id`), or
 * the list itself for a list of ids (`location_ids`), as the modules' own checks name them.
 */
export function idsAt(value: unknown, pattern: string): { field: string; id: string }[] {
  const out: { field: string; id: string }[] = [];
  const steps = pattern.split('.');
  const walk = (v: unknown, i: number, at: string[]) => {
    if (i === steps.length) {
      if (typeof v === 'string' && isUuid(v)) out.push({ field: at.join('.'), id: v.toLowerCase() });
      return;
    }
    const step = steps[i]!;
    const key = step.endsWith('[]') ? step.slice(0, -2) : step;
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return;
    const next = (v as Record<string, unknown>)[key];
    if (!step.endsWith('[]')) return walk(next, i + 1, [...at, key]);
    if (!Array.isArray(next)) return;
    const lastStep = i === steps.length - 1;
    for (const [n, item] of next.entries()) walk(item, i + 1, lastStep ? [...at, key] : [...at, key, String(n)]);
  };
  walk(value, 0, []);
  return out;
}

/** The body's references that `declared` lists (path parameters left out). */
export function bodyReferences(body: unknown, declared: Record<string, string>): Ref[] {
  const refs: Ref[] = [];
  for (const [pattern, target] of Object.entries(declared)) {
    if (pattern.startsWith(':')) continue;
    for (const { field, id } of idsAt(body, pattern)) refs.push({ field, target, id });
  }
  return refs;
}

/** The fields whose ids name no row of the organization; none when a path parameter names none (the route's 404). */
async function unresolved(tx: Queryable, orgId: string, refs: Ref[]): Promise<Record<string, string>> {
  const problems: Record<string, string> = {};
  if (!refs.some((r) => !r.parent)) return problems;
  const { rows } = await tx.query<{ n: number }>('select app.unresolved_references($1, $2::text[], $3::uuid[]) as n', [
    orgId,
    refs.map((r) => r.target),
    refs.map((r) => r.id),
  ]);
  const missing = rows.map((r) => refs[r.n - 1]!);
  if (missing.some((r) => r.parent)) return problems;
  for (const r of missing) problems[r.field] = 'names no record of this organization';
  return problems;
}

/** For services that name reference problems together with their own (config.referencesInService). */
export function referenceProblems(tx: Queryable, orgId: string, body: unknown, declared: Record<string, string>) {
  return unresolved(tx, orgId, bodyReferences(body, declared));
}

/**
 * Collects, after validation and the route's gate, the body's ids that the route declares, and runs their
 * check as the first statement of the request's first transaction (takeReferences), so it costs no extra
 * transaction. Callers without an organization in scope are left to the route (it asks for one).
 */
export function installReferences(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const refs = route.config?.references;
    if (!refs) return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const m of methods) DECLARED_REFERENCES.set(`${m} ${route.url.replace(/:([A-Za-z_]+)/g, '{$1}')}`, refs);
  });
  app.addHook('preHandler', async (request) => {
    const { references: declared, referencesInService } = request.routeOptions.config;
    const orgId = request.ctx?.orgId;
    if (!declared || referencesInService || !orgId || orgId === NIL_UUID) return;
    const refs = bodyReferences(request.body, declared);
    if (!refs.length) return;
    const params = (request.params ?? {}) as Record<string, string | undefined>;
    for (const [key, target] of Object.entries(declared)) {
      const value = key.startsWith(':') ? params[key.slice(1)] : undefined;
      // A path that is no uuid at all names nothing: the route answers it.
      if (value !== undefined && !isUuid(value)) return;
      if (value !== undefined) refs.push({ field: key, target, id: value.toLowerCase(), parent: true });
    }
    pending.set(request, { orgId, refs });
  });
}

/** The reference check still to run for this request, once: the pipeline's inTx runs it first. */
export function takeReferences(request: FastifyRequest): ((tx: Queryable) => Promise<void>) | null {
  const p = pending.get(request);
  if (!p) return null;
  pending.delete(request);
  return async (tx) => {
    const problems = await unresolved(tx, p.orgId, p.refs);
    if (Object.keys(problems).length)
      throw errors.validation(problems, 'An id in the body names no record of this organization; see fields.');
  };
}
