import { randomBytes } from 'node:crypto';
import type { Fixture, Fragment, Prepared, Row } from './types.ts';

/*
 * Appointment files, reviews and iCalendar. Every request names the
 * organization in X-Organization-ID. The appointments are the patient caller's, booked with a
 * specialist made here (not the specialist caller), so the specialist caller, whose
 * appointments.view_own shows only its own, gets 404 on them. Default grants of migration 0067:
 * update_org for admin and customer_support, update_own for specialist; locations.manage is admin's.
 * - Files: added and removed by staff who may update the appointment or by its patient (the patient
 *   removes files its side added: the cells' files are the patient's); read like the appointment
 *   (view_org, view_own on its own, the patient). addAppointmentFile: the harness sends JSON, so a
 *   caller past the gate gets 400 (not multipart) before the appointment is looked up;
 *   appointment-files.test.ts uploads real files.
 * - Reviews: written by the patient only (a fresh done visit per cell), read like the appointment.
 * - .ics: read like the appointment.
 * - Calendar feeds: made and removed by the calendar's specialist (not the specialist caller here) or
 *   with locations.manage (admin, superadmin); staff without either 403; patients and outsiders 403 at
 *   the gate. The feed itself is public: 200 for everyone with its secret URL, anonymous included.
 */

const hex = () => randomBytes(5).toString('hex');
const as = (f: Fixture, p: Prepared = {}): Prepared => ({ ...p, headers: { 'x-organization-id': f.orgId, ...p.headers } });
const row = (r: Partial<Row>): Row => ({
  admin: 403,
  specialist: 403,
  customer_support: 403,
  patient: 403,
  non_member: 403,
  other_org_admin: 403,
  superadmin: 403,
  anonymous: 401,
  ...r,
});

interface Setting {
  specialistId: string;
  calendarId: string;
  serviceId: string;
  slots: string[];
  appointmentId: string;
  fileId: string;
  feedUrl: string;
}

const ok = async (res: { statusCode: number; body: string; json: () => any }) => {
  if (res.statusCode >= 300) throw new Error(`appointment extras fixture failed: ${res.statusCode} ${res.body}`);
  return res.json().data;
};

async function book(f: Fixture, s: Omit<Setting, 'appointmentId' | 'fileId' | 'feedUrl'>): Promise<string> {
  const start = s.slots.shift();
  if (!start) throw new Error('appointment extras fixture ran out of slots');
  const a = await ok(
    await f.t.call('POST', '/v1/appointments', {
      token: f.tokens.superadmin,
      org: f.orgId,
      body: { service_id: s.serviceId, specialist_id: s.specialistId, start, patient_id: f.patientRecordId },
    }),
  );
  return a.id as string;
}

/** A file on the appointment, uploaded by its patient. */
async function patientFile(f: Fixture, appointmentId: string): Promise<string> {
  const boundary = `extras${hex()}`;
  const payload = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="m.pdf"\r\nContent-Type: application/pdf\r\n\r\n`),
    Buffer.from('%PDF-1.4\n%matrix\n'),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  const res = await f.t.app.inject({
    method: 'POST',
    url: `/v1/appointments/${appointmentId}/files`,
    payload,
    headers: {
      authorization: `Bearer ${f.tokens.patient}`,
      'x-organization-id': f.orgId,
      'content-type': `multipart/form-data; boundary=${boundary}`,
    },
  });
  return (await ok(res)).id as string;
}

/**
 * Made once per fixture: a specialist of a fresh member (available 06:00-22:00 every day at a UTC
 * location), a public 30-minute service on a 30-minute grid, its free slots, one appointment of the
 * patient caller with a file, and a feed URL of the specialist's calendar.
 */
async function makeSetting(f: Fixture): Promise<Setting> {
  const as_ = { org: f.orgId, token: f.tokens.superadmin };
  const member = await f.setup('POST', `/v1/organizations/${f.orgId}/members`, {
    email: `extras-spec-${hex()}@example.test`,
    role_code: 'specialist',
  });
  const location = await f.setup('POST', `/v1/organizations/${f.orgId}/locations`, { name: `Extras ${hex()}`, timezone: 'UTC' });
  const specialist = await ok(
    await f.t.call('POST', '/v1/specialists', {
      ...as_,
      body: { user_id: member.user_id, display_name: `Dr Extras ${hex()}`, bookable_online: true, location_ids: [location.id] },
    }),
  );
  await ok(
    await f.t.call('PUT', `/v1/specialists/${specialist.id}/availability`, {
      ...as_,
      body: { rules: [1, 2, 3, 4, 5, 6, 7].map((weekday) => ({ location_id: location.id, weekday, start: '06:00', end: '22:00' })) },
    }),
  );
  const service = await ok(
    await f.t.call('POST', '/v1/services', {
      ...as_,
      body: {
        name: `Extras ${hex()}`,
        duration_minutes: 30,
        price_minor: 1000,
        currency: 'EUR',
        mode: 'in_person',
        is_public: true,
        slot_interval_minutes: 30,
        location_ids: [location.id],
        specialist_ids: [specialist.id],
      },
    }),
  );
  const day = 86_400_000;
  const from = new Date(Date.now() + 2 * day).toISOString().slice(0, 10);
  const to = new Date(Date.now() + 12 * day).toISOString().slice(0, 10);
  const free = await ok(
    await f.t.call('GET', `/v1/public/availability?organization=${f.orgId}&service_id=${service.id}&from=${from}&to=${to}&time_zone=UTC`),
  );
  const calendarId = (await f.t.db.query<{ id: string }>('select id from calendars where specialist_id = $1', [specialist.id])).rows[0]!.id;
  const base = {
    specialistId: specialist.id as string,
    calendarId,
    serviceId: service.id as string,
    slots: (free.slots as { start: string }[]).map((s) => s.start),
  };
  const appointmentId = await book(f, base);
  const fileId = await patientFile(f, appointmentId);
  const feed = await ok(await f.t.call('POST', `/v1/calendars/${calendarId}/feed`, as_));
  return { ...base, appointmentId, fileId, feedUrl: feed.url as string };
}

/** A room calendar at the fixture's location (as the superadmin, in the organization under test). */
const freshRoom = async (f: Fixture) =>
  (
    await ok(
      await f.t.call('POST', '/v1/calendars', {
        token: f.tokens.superadmin,
        org: f.orgId,
        body: { kind: 'room', name: `Room ${hex()}`, location_id: f.locationId },
      }),
    )
  ).id as string;

const settings = new WeakMap<Fixture, Promise<Setting>>();
const setting = (f: Fixture) => {
  let p = settings.get(f);
  if (!p) {
    p = makeSetting(f);
    settings.set(f, p);
  }
  return p;
};

/** A fresh appointment of the patient caller, moved to done (a review needs one, once). */
async function doneVisit(f: Fixture): Promise<string> {
  const id = await book(f, await setting(f));
  for (const status of ['checked_in', 'done'])
    await ok(await f.t.call('PATCH', `/v1/appointments/${id}`, { token: f.tokens.superadmin, org: f.orgId, body: { status } }));
  return id;
}

const readers = { admin: 200, specialist: 404, customer_support: 200, patient: 200, superadmin: 200 };
const appointment = async (f: Fixture, p: Prepared = {}) => as(f, { ...p, params: { id: (await setting(f)).appointmentId, ...p.params } });

export const entries: Fragment = {
  addAppointmentFile: {
    row: row({ admin: 400, specialist: 400, customer_support: 400, patient: 400, superadmin: 400 }),
    request: { method: 'POST', path: '/v1/appointments/{id}/files', prepare: (f) => appointment(f, { body: {} }) },
  },
  listAppointmentFiles: {
    row: row(readers),
    request: { method: 'GET', path: '/v1/appointments/{id}/files', prepare: (f) => appointment(f) },
  },
  downloadAppointmentFile: {
    row: row(readers),
    request: {
      method: 'GET',
      path: '/v1/appointments/{id}/files/{fileId}',
      prepare: async (f) => appointment(f, { params: { fileId: (await setting(f)).fileId } }),
    },
  },
  deleteAppointmentFile: {
    row: row({ admin: 204, specialist: 404, customer_support: 204, patient: 204, superadmin: 204 }),
    request: {
      method: 'DELETE',
      path: '/v1/appointments/{id}/files/{fileId}',
      prepare: async (f) => {
        const s = await setting(f);
        return appointment(f, { params: { fileId: await patientFile(f, s.appointmentId) } });
      },
    },
  },
  createAppointmentReview: {
    row: row({ patient: 201 }),
    request: {
      method: 'POST',
      path: '/v1/appointments/{id}/reviews',
      prepare: async (f, caller) =>
        as(f, { params: { id: caller === 'patient' ? await doneVisit(f) : (await setting(f)).appointmentId }, body: { rating: 5 } }),
    },
  },
  listAppointmentReviews: {
    row: row(readers),
    request: { method: 'GET', path: '/v1/appointments/{id}/reviews', prepare: (f) => appointment(f) },
  },
  getAppointmentIcs: {
    row: row(readers),
    request: { method: 'GET', path: '/v1/appointments/{id}.ics', prepare: (f) => appointment(f) },
  },
  createCalendarFeed: {
    row: row({ admin: 201, superadmin: 201 }),
    request: {
      method: 'POST',
      path: '/v1/calendars/{id}/feed',
      // Another calendar than the one whose feed the public cells read (a rotation would end that URL).
      prepare: async (f) => as(f, { params: { id: await freshRoom(f) } }),
    },
  },
  deleteCalendarFeed: {
    row: row({ admin: 204, superadmin: 204 }),
    request: {
      method: 'DELETE',
      path: '/v1/calendars/{id}/feed',
      prepare: async (f) => {
        const id = await freshRoom(f);
        await ok(await f.t.call('POST', `/v1/calendars/${id}/feed`, { token: f.tokens.superadmin, org: f.orgId }));
        return as(f, { params: { id } });
      },
    },
  },
  getCalendarFeed: {
    row: {
      admin: 200,
      specialist: 200,
      customer_support: 200,
      patient: 200,
      non_member: 200,
      other_org_admin: 200,
      superadmin: 200,
      anonymous: 200,
    },
    request: {
      method: 'GET',
      path: '/v1/public/calendar-feeds/{token}.ics',
      prepare: async (f) => {
        const token = /\/calendar-feeds\/([^/]+)\.ics$/.exec((await setting(f)).feedUrl)![1]!;
        return { params: { token } };
      },
    },
  },
};
