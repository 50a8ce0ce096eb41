import type { FastifyInstance } from 'fastify';
import type { Runtime } from './runtime.ts';

/** The demo clinic of the embedded default: `http://demo.localhost:3003/` books with it. */
export const DEMO_SLUG = 'demo';
const OPERATOR = 'demo-seed@clinic.localhost';
const SPECIALIST = 'dr.demo@clinic.localhost';
/** The demo clinic's administrator: signs in at `/clinic` with the development provider (any email signs in). */
export const DEMO_ADMIN = 'admin@demo.localhost';

class SeedError extends Error {}

/**
 * Creates the demo clinic through the API itself (the same validation and side effects as an
 * operator's calls): organization `demo`, a location with its time zone, an administrator (DEMO_ADMIN,
 * for the clinic app), a specialist with weekly hours, a service bookable online, and the clinic's privacy notice and terms, so the public booking
 * page has slots. Idempotent: an existing `demo` organization is left as it is. The seeding identity is
 * a superadmin only for the seed's duration (granted and revoked by direct database change, as the CLI does).
 * Development issuer only: it signs its own token.
 */
export async function seedDemoClinic(app: FastifyInstance, rt: Runtime): Promise<'created' | 'exists'> {
  if (!rt.devIssuer) throw new SeedError('the demo clinic is seeded only with the development issuer');
  const found = await rt.db.query<{ id: string }>('select id from organizations where slug = $1', [DEMO_SLUG]);
  if (found.rows.length) return 'exists';
  const token = await rt.devIssuer.sign(OPERATOR);
  await rt.db.query('insert into users (email) values ($1) on conflict do nothing', [OPERATOR]);
  await rt.db.query(
    `insert into platform_memberships (user_id, role) select id, 'superadmin' from users where lower(email) = lower($1) on conflict do nothing`,
    [OPERATOR],
  );
  const call = async (method: 'GET' | 'POST' | 'PUT', url: string, body?: unknown, org?: string) => {
    const res = await app.inject({
      method,
      url,
      headers: {
        authorization: `Bearer ${token}`,
        ...(org ? { 'x-organization-id': org } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
    if (res.statusCode >= 300) throw new SeedError(`${method} ${url} answered ${res.statusCode}: ${res.body}`);
    return res.json().data;
  };
  try {
    const org = await call('POST', '/v1/organizations', { name: 'Demo Clinic', slug: DEMO_SLUG, language_code: 'en' });
    for (const purpose of ['org_privacy_notice', 'org_terms']) {
      const text =
        purpose === 'org_privacy_notice'
          ? {
              en: 'Demo Clinic processes your contact and health data to provide care and manage appointments.',
              ro: 'Demo Clinic prelucrează datele de contact și de sănătate pentru îngrijire și programări.',
            }
          : {
              en: 'Appointments can be cancelled up to 24 hours before they start.',
              ro: 'Programările pot fi anulate cu cel puțin 24 de ore înainte.',
            };
      await call('POST', `/v1/organizations/${org.id}/consent-purposes/${purpose}/versions`, { body_translations: text });
    }
    const location = await call('POST', `/v1/organizations/${org.id}/locations`, {
      name: 'Demo Clinic, Central',
      timezone: 'Europe/Bucharest',
    });
    await call('POST', `/v1/organizations/${org.id}/members`, { email: DEMO_ADMIN, role_code: 'admin' });
    const member = await call('POST', `/v1/organizations/${org.id}/members`, { email: SPECIALIST, role_code: 'specialist' });
    const specialist = await call(
      'POST',
      '/v1/specialists',
      { user_id: member.user_id ?? member.id, display_name: 'Dr Ana Demo', bookable_online: true, location_ids: [location.id] },
      org.id,
    );
    await call(
      'PUT',
      `/v1/specialists/${specialist.id}/availability`,
      { rules: [1, 2, 3, 4, 5].map((weekday) => ({ location_id: location.id, weekday, start: '09:00', end: '17:00' })) },
      org.id,
    );
    await call(
      'POST',
      '/v1/services',
      {
        name: 'Physiotherapy session',
        duration_minutes: 30,
        buffer_after_minutes: 0,
        price_minor: 15000,
        currency: 'RON',
        mode: 'in_person',
        is_public: true,
        slot_interval_minutes: 30,
        location_ids: [location.id],
        specialist_ids: [specialist.id],
      },
      org.id,
    );
    return 'created';
  } finally {
    await rt.db.query(
      `delete from platform_memberships where role = 'superadmin' and user_id in (select id from users where lower(email) = lower($1))`,
      [OPERATOR],
    );
  }
}
