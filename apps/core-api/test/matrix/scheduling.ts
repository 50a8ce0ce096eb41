import { randomBytes } from 'node:crypto';
import type { Fixture, Fragment, Prepared, Row } from './types.ts';

/*
 * Calendars, appointments and the public booking flow (spec 4.5 Scheduling and Appointments, 5.2-5.3).
 * Default grants of migration 0067 (spec 2.7): admin every appointments.* code; customer_support
 * view_org, create, update_org and cancel_org; specialist view_own, create, update_own, cancel_own and
 * join; locations.manage is admin's.
 * - Calendars: read by staff who see or book appointments or manage locations (the three staff roles and
 *   superadmin; patients and outsiders 403); rooms and devices, and their availability, are created,
 *   changed and deleted with locations.manage (admin and superadmin).
 * - Appointments: listed and read with view_org, view_own (the specialist caller is the bookable
 *   specialist here, so the appointments are its own) or by the patient its own; booked by staff with
 *   appointments.create for the patient, and by the patient for itself; moved (here: confirmed) by staff
 *   with update_org or update_own on their own, and by the patient on its own; deleted with
 *   appointments.delete (admin). Outsiders and another clinic's admin are refused at the gate (403).
 * - The public routes (availability, holds, guest bookings) take no token: 2xx for everyone, anonymous
 *   included; a token changes nothing.
 * Every cell that takes a slot takes its own (a hold or an appointment each), from a specialist with
 * availability every day, so that no cell meets another's booking.
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
const everyone = (status: number): Row => ({
  admin: status,
  specialist: status,
  customer_support: status,
  patient: status,
  non_member: status,
  other_org_admin: status,
  superadmin: status,
  anonymous: status,
});

const isoDate = (ms: number) => new Date(ms).toISOString().slice(0, 10);

interface Booking {
  specialistId: string;
  locationId: string;
  serviceId: string;
  roomId: string;
  from: string;
  to: string;
  /** The free slot starts not handed out yet. */
  slots: string[];
}

/**
 * What the booking cells share, made once per fixture: the specialist caller's own specialist profile
 * (bookable online, at a UTC location, available 06:00-22:00 every day), a public 30-minute service on a
 * 30-minute grid without buffers, and a room calendar at the same location.
 */
async function makeBooking(f: Fixture): Promise<Booking> {
  const me = await f.setup('GET', '/v1/me', undefined, f.tokens.specialist);
  const location = await f.setup('POST', `/v1/organizations/${f.orgId}/locations`, { name: `Booking ${hex()}`, timezone: 'UTC' });
  const org = { org: f.orgId, token: f.tokens.superadmin };
  const ok = async (res: { statusCode: number; body: string; json: () => any }) => {
    if (res.statusCode >= 300) throw new Error(`scheduling fixture failed: ${res.statusCode} ${res.body}`);
    return res.json().data;
  };
  const specialist = await ok(
    await f.t.call('POST', '/v1/specialists', {
      ...org,
      body: { user_id: me.id, display_name: `Dr Matrix ${hex()}`, bookable_online: true, location_ids: [location.id] },
    }),
  );
  await ok(
    await f.t.call('PUT', `/v1/specialists/${specialist.id}/availability`, {
      ...org,
      body: { rules: [1, 2, 3, 4, 5, 6, 7].map((weekday) => ({ location_id: location.id, weekday, start: '06:00', end: '22:00' })) },
    }),
  );
  const service = await ok(
    await f.t.call('POST', '/v1/services', {
      ...org,
      body: {
        name: `Matrix visit ${hex()}`,
        duration_minutes: 30,
        price_minor: 10000,
        currency: 'RON',
        mode: 'in_person',
        is_public: true,
        slot_interval_minutes: 30,
        location_ids: [location.id],
        specialist_ids: [specialist.id],
      },
    }),
  );
  const room = await ok(
    await f.t.call('POST', '/v1/calendars', { ...org, body: { kind: 'room', name: 'Matrix room', location_id: location.id } }),
  );
  // From the day after tomorrow (UTC), a week: 224 slots, far more than the cells take.
  const from = isoDate(Date.now() + 2 * 86_400_000);
  const to = isoDate(Date.now() + 8 * 86_400_000);
  const free = await f.setup(
    'GET',
    `/v1/public/availability?organization=${f.orgId}&service_id=${service.id}&from=${from}&to=${to}&time_zone=UTC`,
  );
  const slots = (free.slots as { start: string }[]).map((s) => s.start);
  if (slots.length < 100) throw new Error(`scheduling fixture: only ${slots.length} free slots`);
  return { specialistId: specialist.id, locationId: location.id, serviceId: service.id, roomId: room.id, from, to, slots };
}

const cache = new WeakMap<Fixture, Promise<Booking>>();
const booking = (f: Fixture) => {
  let p = cache.get(f);
  if (!p) {
    p = makeBooking(f);
    cache.set(f, p);
  }
  return p;
};

/** A free slot no other cell has taken. */
async function nextSlot(f: Fixture): Promise<{ b: Booking; start: string }> {
  const b = await booking(f);
  const start = b.slots.shift();
  if (!start) throw new Error('scheduling fixture: out of slots');
  return { b, start };
}

/** A booked appointment of the matrix patient with the specialist caller, made by the clinic's admin. */
async function freshAppointment(f: Fixture): Promise<string> {
  const { b, start } = await nextSlot(f);
  const a = await f.setup(
    'POST',
    '/v1/appointments',
    { service_id: b.serviceId, specialist_id: b.specialistId, start, patient_id: f.patientRecordId },
    f.tokens.admin,
  );
  return a.id as string;
}
const shared = new WeakMap<Fixture, Promise<string>>();
const sharedAppointment = (f: Fixture) => {
  let p = shared.get(f);
  if (!p) {
    p = freshAppointment(f);
    shared.set(f, p);
  }
  return p;
};

/** A live hold on a fresh slot, with its secret (placed with no token, as the public page does). */
async function freshHold(f: Fixture): Promise<{ id: string; secret: string }> {
  const { b, start } = await nextSlot(f);
  const res = await f.t.call('POST', '/v1/public/holds', {
    body: { organization: f.orgId, service_id: b.serviceId, specialist_id: b.specialistId, start },
  });
  if (res.statusCode !== 201) throw new Error(`scheduling fixture hold failed: ${res.statusCode} ${res.body}`);
  const h = res.json().data;
  return { id: h.id, secret: h.secret };
}

/** The latest version of each purpose a guest booking must accept (the organization's required ones). */
async function requiredConsents(f: Fixture) {
  const { rows } = await f.t.db.query<{ purpose_code: string; purpose_version: number }>(
    `select cp.code as purpose_code, coalesce(
       (select max(v.version) from consent_purpose_versions v where v.purpose_code = cp.code and v.organization_id = $1),
       (select max(v.version) from consent_purpose_versions v where v.purpose_code = cp.code and v.organization_id is null)) as purpose_version
     from consent_purposes cp where cp.required and cp.scope = 'org'`,
    [f.orgId],
  );
  return rows.filter((r) => r.purpose_version !== null);
}

const freshRoom = async (f: Fixture) => {
  const b = await booking(f);
  return (await f.setup('POST', '/v1/calendars', { kind: 'device', name: `Device ${hex()}`, location_id: b.locationId }, f.tokens.admin))
    .id as string;
};

const calendarReaders = { admin: 200, specialist: 200, customer_support: 200, superadmin: 200 };
const appointmentReaders = { ...calendarReaders, patient: 200 };

export const entries: Fragment = {
  listCalendars: { row: row(calendarReaders), request: { method: 'GET', path: '/v1/calendars', prepare: (f) => as(f) } },
  createCalendar: {
    row: row({ admin: 201, superadmin: 201 }),
    request: {
      method: 'POST',
      path: '/v1/calendars',
      prepare: async (f) => as(f, { body: { kind: 'room', name: `Room ${hex()}`, location_id: (await booking(f)).locationId } }),
    },
  },
  getCalendar: {
    row: row(calendarReaders),
    request: { method: 'GET', path: '/v1/calendars/{id}', prepare: async (f) => as(f, { params: { id: (await booking(f)).roomId } }) },
  },
  updateCalendar: {
    row: row({ admin: 200, superadmin: 200 }),
    request: {
      method: 'PATCH',
      path: '/v1/calendars/{id}',
      prepare: async (f) => as(f, { params: { id: (await booking(f)).roomId }, body: { description: `Floor ${hex()}` } }),
    },
  },
  deleteCalendar: {
    row: row({ admin: 204, superadmin: 204 }),
    request: { method: 'DELETE', path: '/v1/calendars/{id}', prepare: async (f) => as(f, { params: { id: await freshRoom(f) } }) },
  },
  getCalendarAvailability: {
    row: row(calendarReaders),
    request: {
      method: 'GET',
      path: '/v1/calendars/{id}/availability',
      prepare: async (f) => {
        const b = await booking(f);
        return as(f, { params: { id: b.roomId }, query: `from=${b.from}&to=${b.to}` });
      },
    },
  },
  putCalendarAvailability: {
    row: row({ admin: 200, superadmin: 200 }),
    request: {
      method: 'PUT',
      path: '/v1/calendars/{id}/availability',
      prepare: async (f) => {
        const b = await booking(f);
        return as(f, {
          params: { id: b.roomId },
          body: { rules: [{ location_id: b.locationId, weekday: 1 + (Number.parseInt(hex(), 16) % 7), start: '08:00', end: '18:00' }] },
        });
      },
    },
  },

  listAppointments: { row: row(appointmentReaders), request: { method: 'GET', path: '/v1/appointments', prepare: (f) => as(f) } },
  createAppointment: {
    row: row({ admin: 201, specialist: 201, customer_support: 201, patient: 201, superadmin: 201 }),
    request: {
      method: 'POST',
      path: '/v1/appointments',
      prepare: async (f) => {
        const { b, start } = await nextSlot(f);
        return as(f, { body: { service_id: b.serviceId, specialist_id: b.specialistId, start, patient_id: f.patientRecordId } });
      },
    },
  },
  getAppointment: {
    row: row(appointmentReaders),
    request: { method: 'GET', path: '/v1/appointments/{id}', prepare: async (f) => as(f, { params: { id: await sharedAppointment(f) } }) },
  },
  updateAppointment: {
    row: row(appointmentReaders),
    request: {
      method: 'PATCH',
      path: '/v1/appointments/{id}',
      prepare: async (f) => as(f, { params: { id: await freshAppointment(f) }, body: { status: 'confirmed' } }),
    },
  },
  deleteAppointment: {
    row: row({ admin: 204, superadmin: 204 }),
    request: {
      method: 'DELETE',
      path: '/v1/appointments/{id}',
      prepare: async (f) => as(f, { params: { id: await freshAppointment(f) } }),
    },
  },

  getPublicAvailability: {
    row: everyone(200),
    request: {
      method: 'GET',
      path: '/v1/public/availability',
      prepare: async (f) => {
        const b = await booking(f);
        return { query: `organization=${f.orgSlug}&service_id=${b.serviceId}&from=${b.from}&to=${b.from}&time_zone=Europe/Bucharest` };
      },
    },
  },
  getPublicBookingForm: {
    row: everyone(200),
    request: {
      method: 'GET',
      path: '/v1/public/booking-form',
      prepare: async (f) => ({ query: `organization=${f.orgSlug}&service_id=${(await booking(f)).serviceId}` }),
    },
  },
  placeHold: {
    row: everyone(201),
    request: {
      method: 'POST',
      path: '/v1/public/holds',
      prepare: async (f) => {
        const { b, start } = await nextSlot(f);
        return { body: { organization: f.orgSlug, service_id: b.serviceId, specialist_id: b.specialistId, start } };
      },
    },
  },
  releaseHold: {
    row: everyone(200),
    request: {
      method: 'DELETE',
      path: '/v1/public/holds/{id}',
      prepare: async (f) => {
        const h = await freshHold(f);
        return { params: { id: h.id }, headers: { 'x-hold-secret': h.secret } };
      },
    },
  },
  bookAsGuest: {
    row: everyone(201),
    request: {
      method: 'POST',
      path: '/v1/public/bookings',
      prepare: async (f) => {
        const h = await freshHold(f);
        return {
          body: {
            organization: f.orgId,
            hold_id: h.id,
            secret: h.secret,
            name: 'Matrix Guest',
            email: `guest-${hex()}@example.com`,
            consents: await requiredConsents(f),
          },
        };
      },
    },
  },
};
