import { dataOf, type TestApp, uniqueEmail, uniqueSlug } from '../helpers.ts';

/*
 * A clinic that books appointments, for the tests of appointment files, reviews, iCalendar and GDPR:
 * a location in Europe/Bucharest, two specialists available on weekday mornings, a public 30-minute
 * service without buffers, two patients who accepted the clinic's notice. `book` takes the next free
 * slot of a specialist (from the public availability) and books it as the front desk.
 */

export interface Person {
  token: string;
  userId: string;
  /** The patients row at the clinic. */
  id: string;
  email: string;
}

export interface Clinic {
  org: { id: string; slug: string };
  admin: string;
  support: string;
  specialists: { id: string; token: string; userId: string; calendarId: string }[];
  location: string;
  service: string;
  patient: Person;
  otherPatient: Person;
  /** Books the next free slot of specialists[specialist] for the patient, as the front desk. */
  book(o?: { specialist?: number; patient?: Person }): Promise<any>;
  /** Moves an appointment through statuses, as the front desk. */
  move(id: string, ...statuses: string[]): Promise<any>;
  /** The next free slot start of a specialist (taken: it is not handed out again). */
  nextSlot(specialist?: number): Promise<string>;
  call(method: string, url: string, token: string, body?: unknown): Promise<any>;
}

const DAY = 86_400_000;

export async function setUpClinic(t: TestApp, label: string, o: { serviceName?: string } = {}): Promise<Clinic> {
  const org = await t.createOrg({ name: `${label} clinic`, slug: uniqueSlug(label) });
  await t.publishPrivacyNotice(org.id);
  const admin = (await t.addMember(org.id, uniqueEmail(`${label}-admin`), 'admin')).token;
  const support = (await t.addMember(org.id, uniqueEmail(`${label}-support`), 'customer_support')).token;
  const call = (method: string, url: string, token: string, body?: unknown) =>
    t.call(method, url, { token, org: org.id, ...(body !== undefined ? { body } : {}) });
  const location = dataOf(
    await call('POST', `/v1/organizations/${org.id}/locations`, admin, { name: 'Central', timezone: 'Europe/Bucharest' }),
    201,
  ).id as string;
  const specialists: Clinic['specialists'] = [];
  for (const n of [1, 2]) {
    const member = await t.addMember(org.id, uniqueEmail(`${label}-spec${n}`), 'specialist');
    const id = dataOf(
      await call('POST', '/v1/specialists', admin, {
        user_id: member.userId,
        display_name: `Dr Spec ${n}`,
        bookable_online: true,
        location_ids: [location],
      }),
      201,
    ).id as string;
    dataOf(
      await call('PUT', `/v1/specialists/${id}/availability`, admin, {
        rules: [1, 2, 3, 4, 5].map((weekday) => ({ location_id: location, weekday, start: '09:00', end: '12:00' })),
      }),
    );
    const calendarId = (await t.db.query<{ id: string }>('select id from calendars where specialist_id = $1', [id])).rows[0]!.id;
    specialists.push({ id, token: member.token, userId: member.userId, calendarId });
  }
  const service = dataOf(
    await call('POST', '/v1/services', admin, {
      name: o.serviceName ?? 'Physio session',
      duration_minutes: 30,
      price_minor: 15000,
      currency: 'RON',
      mode: 'in_person',
      is_public: true,
      slot_interval_minutes: 30,
      location_ids: [location],
      specialist_ids: specialists.map((s) => s.id),
    }),
    201,
  ).id as string;
  const person = async (name: string): Promise<Person> => {
    const email = uniqueEmail(`${label}-${name}`);
    const p = await t.addPatient(org.id, email);
    await t.acceptOrgPurposes(org.id, p.userId);
    const id = (await t.db.query<{ id: string }>('select id from patients where organization_id = $1 and user_id = $2', [org.id, p.userId]))
      .rows[0]!.id;
    return { ...p, id, email };
  };
  const patient = await person('patient');
  const otherPatient = await person('other');

  // Free slots a week ahead and later, per specialist, handed out once each.
  const from = new Date(Date.now() + 7 * DAY).toISOString().slice(0, 10);
  const to = new Date(Date.now() + 60 * DAY).toISOString().slice(0, 10);
  const res = await t.app.inject({
    method: 'GET',
    url: `/v1/public/availability?organization=${org.id}&service_id=${service}&from=${from}&to=${to}&time_zone=UTC`,
    remoteAddress: '198.51.100.77',
  });
  if (res.statusCode !== 200) throw new Error(`availability failed: ${res.statusCode} ${res.body}`);
  const free = new Map<string, string[]>(specialists.map((s) => [s.id, []]));
  for (const s of res.json().data.slots as { start: string; specialist_id: string }[]) free.get(s.specialist_id)?.push(s.start);

  const clinic: Clinic = {
    org,
    admin,
    support,
    specialists,
    location,
    service,
    patient,
    otherPatient,
    call,
    async nextSlot(specialist = 0) {
      const start = free.get(specialists[specialist]!.id)!.shift();
      if (!start) throw new Error('the fixture ran out of slots');
      return start;
    },
    async book(b = {}) {
      const specialist = b.specialist ?? 0;
      return dataOf(
        await call('POST', '/v1/appointments', support, {
          service_id: service,
          specialist_id: specialists[specialist]!.id,
          start: await clinic.nextSlot(specialist),
          patient_id: (b.patient ?? patient).id,
        }),
        201,
      );
    },
    async move(id, ...statuses) {
      let last: any;
      for (const status of statuses) last = dataOf(await call('PATCH', `/v1/appointments/${id}`, support, { status }));
      return last;
    },
  };
  return clinic;
}

/** A multipart body with one part (the field "file" unless said otherwise). */
export function multipart(file: { name: string; type: string; bytes: Buffer }, field = 'file') {
  const boundary = `----appt${Math.random().toString(16).slice(2)}`;
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${file.name}"\r\nContent-Type: ${file.type}\r\n\r\n`;
  return {
    payload: Buffer.concat([Buffer.from(head), file.bytes, Buffer.from(`\r\n--${boundary}--\r\n`)]),
    contentType: `multipart/form-data; boundary=${boundary}`,
  };
}

export const PDF = Buffer.from('%PDF-1.4\n%appointment\n');
export const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5f1d2b80000000049454e44ae426082',
  'hex',
);

/** POST /v1/appointments/{id}/files with a multipart body, as `token` at `org`. */
export function uploadTo(
  t: TestApp,
  appointmentId: string,
  token: string,
  org: string,
  file: { name: string; type: string; bytes: Buffer } = { name: 'referral.pdf', type: 'application/pdf', bytes: PDF },
  headers: Record<string, string> = {},
) {
  const m = multipart(file);
  return t.app.inject({
    method: 'POST',
    url: `/v1/appointments/${appointmentId}/files`,
    payload: m.payload,
    headers: { authorization: `Bearer ${token}`, 'x-organization-id': org, 'content-type': m.contentType, ...headers },
  });
}
