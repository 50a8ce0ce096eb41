import type { Database, Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';
import type { Logger } from 'pino';
import type { Actor } from '../../platform/actor.ts';
import { recordChange } from '../../platform/audit.ts';
import { findOrganization } from '../organizations/queries.ts';
import { allRouteLimits, deleteRouteLimit, findRouteLimit, type RateLimitRow, upsertRouteLimit } from './queries.ts';

/**
 * This instance's copy of the operator's per-organization figures, read by the request pipeline on every
 * authenticated request. It is reloaded in one query when older than `ttlMs` (one reload at a time; callers
 * meanwhile wait for it) and at once after this instance changed a figure; other instances follow within the
 * TTL. A failed reload keeps the figures it had: limits fail open, never closed.
 */
export interface RouteLimitCache {
  limitOf(orgId: string): Promise<number | undefined>;
  reload(): Promise<void>;
}

export function createRouteLimitCache(deps: { db: Database; ttlMs: number; logger: Logger; now?: () => number }): RouteLimitCache {
  const now = deps.now ?? Date.now;
  let figures = new Map<string, number>();
  let loadedAt = Number.NEGATIVE_INFINITY;
  let loading: Promise<void> | null = null;
  const reload = () => {
    loading ??= allRouteLimits(deps.db)
      .then((next) => {
        figures = next;
        loadedAt = now();
      })
      .catch((err: Error) => {
        // Try again on the next request after a short pause, with the figures it had.
        loadedAt = now() - deps.ttlMs + 1000;
        deps.logger.warn({ err: err.message }, 'could not reload per-organization rate limits; keeping the previous figures');
      })
      .finally(() => {
        loading = null;
      });
    return loading;
  };
  return {
    async limitOf(orgId) {
      if (now() - loadedAt >= deps.ttlMs) await reload();
      return figures.get(orgId);
    },
    reload,
  };
}

/** What the operator reads and writes: the figure in force for one organization and where it comes from. */
export interface RouteLimitView {
  organization_id: string;
  route_limit: number;
  window_seconds: number;
  source: 'organization' | 'platform';
  platform_route_limit: number;
  reason: string | null;
  updated_at: Date | null;
}

export interface PlatformFigure {
  limit: number;
  windowSeconds: number;
}

function viewOf(orgId: string, row: RateLimitRow | null, platform: PlatformFigure): RouteLimitView {
  return {
    organization_id: orgId,
    route_limit: row?.route_limit ?? platform.limit,
    window_seconds: platform.windowSeconds,
    source: row ? 'organization' : 'platform',
    platform_route_limit: platform.limit,
    reason: row?.reason ?? null,
    updated_at: row ? new Date(row.updated_at) : null,
  };
}

async function requireOrganization(tx: Queryable, orgId: string): Promise<void> {
  if (!(await findOrganization(tx, orgId))) throw errors.notFound('No organization with this id.');
}

export async function getRouteLimit(tx: Queryable, orgId: string, platform: PlatformFigure): Promise<RouteLimitView> {
  await requireOrganization(tx, orgId);
  return viewOf(orgId, await findRouteLimit(tx, orgId), platform);
}

/** Sets an organization's own figure; the audit entry keeps the figure before and after. */
export async function setRouteLimit(
  tx: Queryable,
  actor: Actor,
  orgId: string,
  body: { route_limit: number; reason?: string | null },
  platform: PlatformFigure,
): Promise<RouteLimitView> {
  await requireOrganization(tx, orgId);
  const before = await findRouteLimit(tx, orgId);
  const row = await upsertRouteLimit(tx, orgId, body.route_limit, body.reason ?? null, actor.ctx.principalId);
  await recordChange(
    tx,
    actor,
    'organization.rate_limit_set',
    { type: 'organization', id: orgId, organizationId: orgId },
    { route_limit: { from: before?.route_limit ?? null, to: row.route_limit }, reason: row.reason },
  );
  return viewOf(orgId, row, platform);
}

/** Back to the platform's figure. */
export async function clearRouteLimit(tx: Queryable, actor: Actor, orgId: string): Promise<void> {
  await requireOrganization(tx, orgId);
  const removed = await deleteRouteLimit(tx, orgId);
  if (!removed) return;
  await recordChange(
    tx,
    actor,
    'organization.rate_limit_cleared',
    { type: 'organization', id: orgId, organizationId: orgId },
    { route_limit: { from: removed.route_limit, to: null } },
  );
}
