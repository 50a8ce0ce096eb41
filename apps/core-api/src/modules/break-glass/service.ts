import type { Queryable } from '@clinic/db';
import { AppError, errors } from '@clinic/http-kit';
import { recordChange } from '../../platform/audit.ts';
import type { Actor } from '../../platform/actor.ts';
import { endSession, findOwnSession, insertSession, organizationExists, type SessionRow } from './queries.ts';
import { DEFAULT_MINUTES, MAX_MINUTES, REASON_CATEGORIES, type BreakGlassScope } from './schemas.ts';

export interface OpenSessionInput {
  organization_id: string;
  scope: BreakGlassScope;
  reason_category: string;
  reason_text: string;
  reason_ref?: string;
  expires_in_minutes?: number;
}

/**
 * What a console needs to draw the elevation form (spec 4.7): where to post, what to fill in, and
 * the organization and scope the refused route asked for.
 */
export function elevationForm(orgId: string, scope: BreakGlassScope) {
  return {
    method: 'POST',
    path: '/v1/break-glass/sessions',
    organization_id: orgId,
    scope,
    reason_categories: [...REASON_CATEGORIES],
    fields: {
      reason_text: { required: true, min_length: 10, max_length: 2000 },
      reason_ref: { required: false, max_length: 200 },
      expires_in_minutes: { required: false, default: DEFAULT_MINUTES, minimum: 1, maximum: MAX_MINUTES },
    },
  };
}

export function breakGlassRequired(orgId: string, scope: BreakGlassScope, message?: string): AppError {
  return new AppError(
    403,
    'break_glass_required',
    message ?? `Access to this organization's ${scope} needs an open break-glass session: POST /v1/break-glass/sessions with a reason.`,
    { extra: { elevation: elevationForm(orgId, scope) } },
  );
}

export function breakGlassExpired(session: SessionRow): AppError {
  return new AppError(
    410,
    'break_glass_expired',
    session.ended_at
      ? `The break-glass session ${session.id} was ended at ${session.ended_at.toISOString()}; open a new one to continue.`
      : `The break-glass session ${session.id} expired at ${session.expires_at.toISOString()}; open a new one to continue.`,
    {
      extra: { session_id: session.id, expired_at: session.expires_at, elevation: elevationForm(session.organization_id, session.scope) },
    },
  );
}

/** POST /v1/break-glass/sessions: the session and its audit entry, in the organization's own trail. */
export async function openSession(tx: Queryable, actor: Actor, input: OpenSessionInput): Promise<SessionRow> {
  if (!(await organizationExists(tx, input.organization_id))) throw errors.organizationNotFound();
  const session = await insertSession(tx, {
    organization_id: input.organization_id,
    superadmin_user_id: actor.ctx.principalId,
    scope: input.scope,
    reason_category: input.reason_category,
    reason_text: input.reason_text,
    reason_ref: input.reason_ref ?? null,
    minutes: input.expires_in_minutes ?? DEFAULT_MINUTES,
  });
  // In the organization's trail, so its administrators see who opened access to their data and why.
  await recordChange(
    tx,
    actor,
    'break_glass.opened',
    { type: 'break_glass_session', id: session.id, organizationId: session.organization_id },
    {
      scope: session.scope,
      reason_category: session.reason_category,
      reason_text: session.reason_text,
      reason_ref: session.reason_ref,
      expires_at: session.expires_at,
    },
    { actionContext: 'break_glass', breakGlassId: session.id },
  );
  return session;
}

/** The audit entry of an action taken under a session (spec 6.2: action_context break_glass + break_glass_id). */
export function auditUnderSession(
  tx: Queryable,
  actor: Actor,
  session: SessionRow,
  action: string,
  entity: { type: string; id?: string | null },
  data: Record<string, unknown> = {},
): Promise<void> {
  return recordChange(
    tx,
    actor,
    action,
    { ...entity, organizationId: session.organization_id },
    { scope: session.scope, ...data },
    { actionContext: 'break_glass', breakGlassId: session.id },
  );
}

/**
 * POST /v1/break-glass/sessions/{id}/end: the superadmin's own session ends now, audited in the
 * organization's trail. Ending one that already ended or expired changes nothing and answers it as it is.
 */
export async function endOwnSession(tx: Queryable, actor: Actor, id: string): Promise<SessionRow> {
  const own = await findOwnSession(tx, actor.ctx.principalId, id);
  if (!own) throw errors.notFound('No break-glass session of yours with this id.');
  const ended = await endSession(tx, own.id);
  if (!ended) return own;
  await recordChange(
    tx,
    actor,
    'break_glass.ended',
    { type: 'break_glass_session', id: ended.id, organizationId: ended.organization_id },
    { scope: ended.scope, ended_at: ended.ended_at, expires_at: ended.expires_at },
    { actionContext: 'break_glass', breakGlassId: ended.id },
  );
  return ended;
}
