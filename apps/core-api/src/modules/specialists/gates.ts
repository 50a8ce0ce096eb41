import { errors } from '@clinic/http-kit';
import type { FastifyRequest } from 'fastify';
import { hasPermission } from '../../platform/identity/context.ts';
import { contextOf } from '../../platform/route.ts';
import { isPatientCaller } from '../../platform/identity/context.ts';

/** specialists.view, or a patient of the organization (the clinic's directory, without contact details). */
export async function readGate(request: FastifyRequest): Promise<void> {
  const ctx = request.ctx;
  if (!ctx) throw errors.unauthorized();
  if (!hasPermission(ctx, 'specialists.view') && !isPatientCaller(ctx))
    throw errors.forbidden('This needs the specialists.view permission in the organization.');
}
/** specialists.update_org, or specialists.update_self (the service checks that the profile is the caller's own). */
export async function writeGate(request: FastifyRequest): Promise<void> {
  const ctx = contextOf(request);
  if (!hasPermission(ctx, 'specialists.update_org') && !hasPermission(ctx, 'specialists.update_self')) {
    throw errors.forbidden('This needs the specialists.update_org or specialists.update_self permission in the organization.');
  }
}
