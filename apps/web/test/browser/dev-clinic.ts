/**
 * A bookable clinic on a running platform, for the UI's development loop and browser tests when the
 * proxy's demo seed is not at hand: a location, a public service, a specialist bookable online with
 * weekday hours, and a published privacy notice (en and ro).
 *
 *   DATA_DIR=<the platform's> npx tsx apps/web/test/browser/dev-clinic.ts http://127.0.0.1:<PORT> [slug]
 */
import { spawnSync } from 'node:child_process';
import { createClient } from '@clinic/client';
import { parseConfig } from '../../../core-api/src/config.ts';
import { createDevIssuer } from '../../../core-api/src/platform/auth/dev-issuer.ts';

export interface DevClinic {
  id: string;
  slug: string;
  name: string;
  serviceId: string;
  specialistId: string;
  locationId: string;
  /** The bearer token of the clinic's administrator (a member; development issuer), to act as its staff in tests. */
  adminToken: string;
  /** Signs a development token for any email. */
  token(email: string): Promise<string>;
}

export async function createDevClinic(apiUrl: string, opts: { slug: string; name?: string; env?: NodeJS.ProcessEnv }): Promise<DevClinic> {
  const env = { ...process.env, ...opts.env };
  const config = parseConfig(env);
  if (config.auth.mode !== 'development') throw new Error('the dev clinic needs the development issuer');
  const issuer = await createDevIssuer({ dataDir: config.dataDir, issuer: config.auth.issuer, audience: config.auth.audience });
  const adminEmail = `admin+${opts.slug}@example.com`;
  const adminToken = await issuer.sign(adminEmail);
  const api = createClient({ baseUrl: apiUrl, token: adminToken });
  await api.getMe();
  const grant = spawnSync('npm', ['run', '-s', 'cli', '--', 'superadmin', 'grant', adminEmail], { env, encoding: 'utf8' });
  if (grant.status !== 0) throw new Error(`superadmin grant failed: ${grant.stderr}${grant.stdout}`);
  const org = (await api.createOrganization({ body: { name: opts.name ?? 'Northside Physio', slug: opts.slug } })).data.data;
  const o = { organizationId: org.id };
  await api.publishOrgConsentVersion({
    params: { id: org.id, code: 'org_privacy_notice' },
    body: {
      body_translations: {
        en: `${org.name} keeps your name, contact details and visit notes to care for you, for as long as the law requires. You may ask for a copy or erasure at any time.`,
        ro: `${org.name} păstrează numele, datele de contact și notițele vizitelor pentru a vă îngriji, atât cât cere legea. Puteți cere oricând o copie sau ștergerea lor.`,
      },
    },
  });
  const location = (
    await api.createLocation({
      params: { id: org.id },
      body: { name: 'Central clinic', timezone: 'Europe/Bucharest', address_line1: 'Str. Lipscani 10', city: 'București' },
    })
  ).data.data;
  // Staff work is done by a member: a superadmin reads no patient data without a break-glass session.
  const deskEmail = `desk+${opts.slug}@example.com`;
  const deskToken = await issuer.sign(deskEmail);
  await createClient({ baseUrl: apiUrl, token: deskToken }).getMe();
  await api.addMember({ params: { id: org.id }, body: { email: deskEmail, role_code: 'admin' } });
  const memberEmail = `ana+${opts.slug}@example.com`;
  await createClient({ baseUrl: apiUrl, token: await issuer.sign(memberEmail) }).getMe();
  const member = (await api.addMember({ params: { id: org.id }, body: { email: memberEmail, role_code: 'specialist' } })).data.data as {
    user_id: string;
  };
  const specialist = (
    await api.createSpecialist({
      ...o,
      body: {
        user_id: member.user_id,
        display_name: 'Dr Ana Popescu',
        title: 'Physiotherapist',
        bookable_online: true,
        location_ids: [location.id],
      } as never,
    })
  ).data.data;
  const rules = [1, 2, 3, 4, 5, 6, 7].map((weekday) => ({ location_id: location.id, weekday, start: '08:00', end: '20:00' }));
  await api.putSpecialistAvailability({ ...o, params: { id: specialist.id }, body: { rules } as never });
  const service = (
    await api.createService({
      ...o,
      body: {
        name: 'Physiotherapy session',
        description: 'Assessment and treatment, 45 minutes with a physiotherapist.',
        duration_minutes: 45,
        price_minor: 20000,
        currency: 'RON',
        mode: 'in_person',
        is_public: true,
        slot_interval_minutes: 45,
        min_notice_minutes: 0,
        location_ids: [location.id],
        specialist_ids: [specialist.id],
      } as never,
    })
  ).data.data;
  return {
    id: org.id,
    slug: org.slug,
    name: org.name,
    serviceId: service.id,
    specialistId: specialist.id,
    locationId: location.id,
    adminToken: deskToken,
    token: (email) => issuer.sign(email),
  };
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  const [apiUrl = 'http://127.0.0.1:3000', slug = 'dev'] = process.argv.slice(2);
  createDevClinic(apiUrl, { slug }).then(
    (c) => console.log(JSON.stringify({ ...c, token: undefined })),
    (e: unknown) => {
      console.error(e);
      process.exit(1);
    },
  );
}
