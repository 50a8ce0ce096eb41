import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AccessEntry, AccessLog } from './access-log.ts';
import { breakGlassSessionOf, recordBreakGlassRead } from './gates.ts';
import { isPatientCaller } from './identity/context.ts';

/** What a route read of patient data: the handler says it, the hook stores it before the answer leaves. */
export interface AccessRead {
  action: string;
  patientIds: string[];
  targetId?: string | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Records a read of patient data (spec 6.2) for the access log. The answer is sent only once the
     * entry is stored; a read of one's own record as a patient is not recorded.
     */
    logAccess(read: AccessRead): void;
  }
}

const reads = new WeakMap<FastifyRequest, AccessRead[]>();

/** Installs logAccess and the onSend hook that stores what a successful request read. */
export function installAccessLog(app: FastifyInstance, log: AccessLog): void {
  app.decorateRequest('logAccess', function (this: FastifyRequest, read: AccessRead) {
    if (!read.patientIds.length) return;
    const list = reads.get(this) ?? [];
    list.push(read);
    reads.set(this, list);
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const ctx = request.ctx;
    if (!ctx?.orgId) return payload;
    const imp = ctx.impersonation;
    // A patient reading its own data is no one else's access; a caregiver's or an impersonation's is.
    const ownRead = isPatientCaller(ctx) && !imp && !ctx.actingForPatientId;
    const list = reply.statusCode < 400 && !ownRead ? (reads.get(request) ?? []) : [];
    // Served under break-glass: every such answer is recorded against the session, whatever the route logged.
    const breakGlass = breakGlassSessionOf(request);
    if (breakGlass && reply.statusCode < 400)
      await recordBreakGlassRead(request, breakGlass, reply.statusCode, [...new Set(list.flatMap((r) => r.patientIds))]);
    // Every request made with an impersonation token is recorded, whatever it did or was answered.
    const made: AccessRead[] = imp ? [{ action: 'impersonation.request', patientIds: [imp.patientId] }] : [];
    if (!list.length && !made.length) return payload;
    const context = imp
      ? ({ actionContext: 'impersonation', contextId: imp.id } as const)
      : breakGlass
        ? ({ actionContext: 'break_glass', contextId: breakGlass.id } as const)
        : ctx.actingForPatientId
          ? ({ actionContext: 'caregiver', contextId: null } as const)
          : ({ actionContext: null, contextId: null } as const);
    const entries: AccessEntry[] = [...made, ...list].map((r) => ({
      organizationId: ctx.orgId!,
      actorUserId: imp?.byPrincipalId ?? ctx.principalId,
      patientIds: [...new Set(r.patientIds)],
      action: r.action,
      targetId: r.targetId ?? null,
      ...context,
      method: request.method,
      route: request.routeOptions.url ?? null,
      requestId: String(request.id),
      ip: request.ip,
    }));
    // A read whose entry cannot be stored is not answered (the error handler turns this into a 500).
    await log.record(entries);
    return payload;
  });
}
