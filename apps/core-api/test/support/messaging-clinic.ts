import { dataOf, type TestApp, uniqueEmail, uniqueSlug } from '../helpers.ts';

/*
 * A clinic for the tests of messages and automations: everything in UTC, one specialist available all day
 * every day (staff book any free 30-minute step), a 30-minute public service, patients with a name, an
 * email and a mobile number who accepted the clinic's notice. `book` books a patient `hours` from now, on the
 * half hour, as the front desk.
 */
export interface Patient {
  id: string;
  userId: string;
  token: string;
  email: string;
  phone: string;
}

export interface MessagingClinic {
  org: { id: string; slug: string; name: string };
  admin: string;
  support: string;
  specialist: string;
  service: string;
  location: string;
  patient(first?: string): Promise<Patient>;
  book(patient: Patient, hours: number): Promise<{ id: string; starts_at: string }>;
  /** A free half hour at or after `hours` from now (taken: not handed out again). */
  freeSlot(hours: number): string;
  call(method: string, url: string, token: string, body?: unknown): Promise<any>;
}

const HALF_HOUR = 1_800_000;
let phones = 0;

export const slotIn = (hours: number) => new Date(Math.ceil((Date.now() + hours * 3_600_000) / HALF_HOUR) * HALF_HOUR).toISOString();

export async function setUpMessagingClinic(t: TestApp, label: string): Promise<MessagingClinic> {
  const org = await t.createOrg({ name: `${label} clinic`, slug: uniqueSlug(label), language_code: 'en' });
  await t.publishPrivacyNotice(org.id);
  const admin = (await t.addMember(org.id, uniqueEmail(`${label}-admin`), 'admin')).token;
  const support = (await t.addMember(org.id, uniqueEmail(`${label}-support`), 'customer_support')).token;
  const call = (method: string, url: string, token: string, body?: unknown) =>
    t.call(method, url, { token, org: org.id, ...(body !== undefined ? { body } : {}) });
  const location = dataOf(await call('POST', `/v1/organizations/${org.id}/locations`, admin, { name: 'Central', timezone: 'UTC' }), 201)
    .id as string;
  const member = await t.addMember(org.id, uniqueEmail(`${label}-spec`), 'specialist');
  const specialist = dataOf(
    await call('POST', '/v1/specialists', admin, {
      user_id: member.userId,
      display_name: 'Dr Who',
      bookable_online: true,
      location_ids: [location],
    }),
    201,
  ).id as string;
  dataOf(
    await call('PUT', `/v1/specialists/${specialist}/availability`, admin, {
      rules: [1, 2, 3, 4, 5, 6, 7].map((weekday) => ({ location_id: location, weekday, start: '00:00', end: '24:00' })),
    }),
  );
  const service = dataOf(
    await call('POST', '/v1/services', admin, {
      name: 'Physio session',
      duration_minutes: 30,
      price_minor: 15000,
      currency: 'EUR',
      mode: 'in_person',
      is_public: true,
      slot_interval_minutes: 30,
      location_ids: [location],
      specialist_ids: [specialist],
    }),
    201,
  ).id as string;
  // One specialist: each booking takes the first free half hour at or after the time asked for.
  const taken = new Set<string>();
  const freeSlot = (hours: number) => {
    let start = slotIn(hours);
    while (taken.has(start)) start = new Date(new Date(start).getTime() + HALF_HOUR).toISOString();
    taken.add(start);
    return start;
  };
  return {
    org,
    admin,
    support,
    specialist,
    service,
    location,
    call,
    freeSlot,
    async patient(first = 'Ana') {
      const email = uniqueEmail(`${label}-${first.toLowerCase()}`);
      const p = await t.addPatient(org.id, email);
      await t.acceptOrgPurposes(org.id, p.userId);
      const phone = `+4071${String(1_000_000 + ++phones).slice(-7)}`;
      const { rows } = await t.db.query<{ id: string }>(
        `update patients set first_name = $3, last_name = 'Example', phone = $4 where organization_id = $1 and user_id = $2 returning id`,
        [org.id, p.userId, first, phone],
      );
      return { id: rows[0]!.id, userId: p.userId, token: p.token, email, phone };
    },
    async book(patient, hours) {
      const a = dataOf(
        await call('POST', '/v1/appointments', support, {
          service_id: service,
          specialist_id: specialist,
          location_id: location,
          start: freeSlot(hours),
          patient_id: patient.id,
        }),
        201,
      );
      return { id: a.id, starts_at: a.starts_at };
    },
  };
}
