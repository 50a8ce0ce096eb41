import { createHash, randomBytes } from 'node:crypto';
import type { Fixture, Fragment, Row } from './types.ts';

/*
 * The hold stream (spec 4.5 Scheduling, 5.2-5.3): public, no token; the hold's secret decides, not who
 * calls, so every caller (anonymous included) gets 200 with the right secret and a token changes nothing.
 * Each cell follows a hold of its own that has already ended (released), so the stream answers its final
 * event at once and closes: the matrix calls through app.inject, which waits for the end of a response.
 * The hold is written straight into the table with a known secret: placing one through the API would
 * spend the per-IP hold budget that other fragments' cells use.
 */
const everyone: Row = {
  admin: 200,
  specialist: 200,
  customer_support: 200,
  patient: 200,
  non_member: 200,
  other_org_admin: 200,
  superadmin: 200,
  anonymous: 200,
};

const hex = () => randomBytes(5).toString('hex');

/** A specialist of its own (a new member) and a public service it delivers, made once per fixture. */
const targets = new WeakMap<Fixture, Promise<{ specialistId: string; serviceId: string }>>();
function target(f: Fixture) {
  let made = targets.get(f);
  if (!made) {
    made = (async () => {
      const member = await f.setup('POST', `/v1/organizations/${f.orgId}/members`, {
        email: `hold-stream-${hex()}@example.com`,
        role_code: 'specialist',
      });
      const as = { token: f.tokens.superadmin, org: f.orgId };
      const ok = (res: { statusCode: number; body: string; json: () => any }) => {
        if (res.statusCode >= 300) throw new Error(`hold stream fixture failed: ${res.statusCode} ${res.body}`);
        return res.json().data;
      };
      const specialist = ok(
        await f.t.call('POST', '/v1/specialists', {
          ...as,
          body: { user_id: member.user_id, display_name: `Dr Stream ${hex()}`, bookable_online: true },
        }),
      );
      const service = ok(
        await f.t.call('POST', '/v1/services', {
          ...as,
          body: {
            name: `Stream ${hex()}`,
            duration_minutes: 30,
            price_minor: 0,
            currency: 'EUR',
            mode: 'in_person',
            is_public: true,
            specialist_ids: [specialist.id],
          },
        }),
      );
      return { specialistId: specialist.id as string, serviceId: service.id as string };
    })();
    targets.set(f, made);
  }
  return made;
}

export const entries: Fragment = {
  streamHold: {
    row: everyone,
    request: {
      method: 'GET',
      path: '/v1/public/holds/{id}/stream',
      prepare: async (f) => {
        const { specialistId, serviceId } = await target(f);
        const secret = `hold_${randomBytes(24).toString('base64url')}`;
        const { rows } = await f.t.db.query<{ id: string }>(
          `insert into holds (organization_id, service_id, specialist_id, starts_at, ends_at, secret_hash, status, expires_at, ended_at)
           values ($1, $2, $3, now() + interval '30 days', now() + interval '30 days 30 minutes', $4, 'released',
                   now() + interval '10 minutes', now())
           returning id`,
          [f.orgId, serviceId, specialistId, createHash('sha256').update(secret).digest('hex')],
        );
        return { params: { id: rows[0]!.id }, headers: { 'x-hold-secret': secret } };
      },
    },
  },
};
