import { ErrorResponse, parsePicker, PickerOf, PickerQuery, pickerEnvelope, Uuid } from '@clinic/http-kit';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { requirePermission } from '../../platform/gates.ts';
import type { Runtime } from '../../platform/runtime.ts';
import { listUsers } from './service.ts';
import { contextOf, routesOf } from '../../platform/route.ts';

const UserPickerItem = Type.Object({
  id: Uuid,
  email: Type.String(),
  role_code: Type.String({
    description:
      "The user's role at the organization in scope: a display label only, never branch authorization on it. Empty for a superadmin without organization scope.",
  }),
});

/** The users picker GET /v1/users (spec 4.1 picker conventions). */
export function userRoutes(app: FastifyInstance, _rt: Runtime): void {
  const r = routesOf(app, { tags: ['users'], errors: {} });

  r.get(
    '/v1/users',
    {
      onRequest: [requirePermission('organizations.view_directory')],
      schema: {
        operationId: 'listUsers',
        summary: 'Typeahead over the staff directory of the organization in scope',
        description:
          'Picker (spec 4.1): q is a trimmed, case-insensitive substring of the email; ids (comma-separated uuids, invalid ones dropped) wins over q when non-empty; limit defaults to 20 and clamps to 50. No pagination. Members of the organization in scope only; a superadmin without organization scope searches every user, with role_code "".',
        querystring: PickerQuery,
        response: {
          200: PickerOf(UserPickerItem),
          401: ErrorResponse,
          403: ErrorResponse,
          404: ErrorResponse,
          422: ErrorResponse,
          429: ErrorResponse,
        },
      },
    },
    async (request) => {
      const ctx = contextOf(request);
      const picker = parsePicker(request.query);
      return pickerEnvelope(await request.inTx((tx) => listUsers(tx, ctx, picker)));
    },
  );
}
