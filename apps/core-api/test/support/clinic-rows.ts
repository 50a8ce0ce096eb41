import assert from 'node:assert/strict';
import { dataOf, uniqueEmail, type TestApp } from '../helpers.ts';

/**
 * One row of each kind the clinical routes nest under (a form, an appointment, a patient, templates, a plan, a
 * segment, a webhook subscription, ...), made through the API in one organization by its admin. Returns the
 * admin and the rows' ids by table.
 */
export async function clinicRows(
  t: TestApp,
  orgId: string,
): Promise<{ admin: { token: string; userId: string }; rows: Record<string, string> }> {
  const admin = await t.addMember(orgId, uniqueEmail('rows-admin'), 'admin');
  const patient = await t.addPatient(orgId, uniqueEmail('rows-patient'));
  const make = async (url: string, body: unknown) => dataOf(await t.call('POST', url, { token: admin.token, org: orgId, body }), 201);
  const hex = () => Math.random().toString(16).slice(2, 8);
  const site = await make(`/v1/organizations/${orgId}/locations`, { name: 'Room', timezone: 'Europe/Bucharest' });
  const field = await make('/v1/custom-fields', { entity_type: 'form', key: `note_${hex()}`, label: 'Note', field_type: 'text' });
  const template = await make('/v1/form-templates', { name: 'Form', fields: [{ custom_field_id: field.id }] });
  const patientId = (
    await t.db.query<{ id: string }>('select id from patients where organization_id = $1 and user_id = $2', [orgId, patient.userId])
  ).rows[0]!.id;
  const form = await make('/v1/forms', { form_template_id: template.id, patient_id: patientId });
  const specialist = await make('/v1/specialists', {
    user_id: admin.userId,
    display_name: 'Dr',
    bookable_online: true,
    location_ids: [site.id],
  });
  dataOf(
    await t.call('PUT', `/v1/specialists/${specialist.id}/availability`, {
      token: admin.token,
      org: orgId,
      body: { rules: [1, 2, 3, 4, 5, 6, 7].map((weekday) => ({ location_id: site.id, weekday, start: '08:00', end: '18:00' })) },
    }),
  );
  const service = await make('/v1/services', {
    name: `Visit ${hex()}`,
    duration_minutes: 30,
    price_minor: 100,
    currency: 'RON',
    mode: 'in_person',
    is_public: true,
    location_ids: [site.id],
    specialist_ids: [specialist.id],
  });
  const plan = await make('/v1/service-plans', {
    name: `Plan ${hex()}`,
    price_minor: 1,
    currency: 'RON',
    validity_days: 30,
    services: [{ service_id: service.id, quantity: 1 }],
  });
  const day = new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10);
  const free = await t.call('GET', `/v1/public/availability?organization=${orgId}&service_id=${service.id}&from=${day}&to=${day}`);
  const slot = (free.json().data.slots as { start: string }[])[0];
  assert.ok(slot, free.body);
  const appointment = await make('/v1/appointments', {
    service_id: service.id,
    specialist_id: specialist.id,
    start: slot.start,
    patient_id: patientId,
  });
  const segment = await make('/v1/segments', {
    name: `S ${hex()}`,
    criteria: { field: 'patient.date_of_birth', op: 'before', value: '2024-02-29' },
  });
  const pdf = await make('/v1/pdf-templates', {
    name: 'Pdf',
    kind: 'form',
    layout: { blocks: [{ type: 'heading', text: '{{form.title}}' }] },
  });
  await t.db.query(
    `insert into telerehab_settings (organization_id, enabled, intended_use_version, intended_use_accepted_at) values ($1, true, '1', now())
     on conflict do nothing`,
    [orgId],
  );
  const squat = (await t.db.query<{ id: string }>(`select id from exercises where slug = 'squat' and organization_id is null`)).rows[0]!.id;
  const treatment = await make('/v1/treatment-plans', {
    name: 'Knee',
    phases: [{ name: 'W1', days: [{ items: [{ exercise_id: squat, sets: [{ side: 'left', reps: 10 }] }] }] }],
  });
  const rows: Record<string, string> = {
    locations: site.id,
    custom_fields: field.id,
    form_templates: template.id,
    patients: patientId,
    forms: form.id,
    specialists: specialist.id,
    services: service.id,
    service_plans: plan.id,
    appointments: appointment.id,
    segments: segment.id,
    pdf_templates: pdf.id,
    treatment_plans: treatment.id,
  };
  // Sealed with the runtime's box, as the API seals it: a route that opens it (the test delivery) meets a real secret.
  const sub = await t.db.query<{ id: string }>(
    `insert into webhook_subscriptions (organization_id, url, event_types, secret_sealed) values ($1, 'https://receiver.example/h', '{*}', $2) returning id`,
    [orgId, t.rt.secrets.seal(`whsec_${hex()}${hex()}`)],
  );
  rows.webhook_subscriptions = sub.rows[0]!.id;
  return { admin, rows };
}
