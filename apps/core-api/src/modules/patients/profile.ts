import { clinicCountry } from '../../platform/phone.ts';
import type { Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';
import type { Static } from 'typebox';
import type { OrgActor } from '../../platform/actor.ts';
import { canonicalLanguage } from '../../platform/locale.ts';
import { audit } from '../../platform/audit.ts';
import { emit } from '../events/emit.ts';
import { presentValues, publishedFieldsOf } from '../custom-fields/values.ts';
import type { PublishedField } from '../custom-fields/queries.ts';
import { isCountryCode } from '../locations/validation.ts';
import * as q from './queries.ts';
import type { PatientProfile } from './schemas.ts';
import { recordOf, type PatientBody } from './service.ts';

const notFound = () => errors.notFound('No patient with this id in this organization.');

export type ProfileBody = Omit<PatientBody, 'notes' | 'email'> & Partial<Record<q.ProfileColumn, string | null>>;

/** The profile as a caller sees it: a patient gets no clinic record number and no private fields (spec 5.8). */
function present(row: q.ProfileRow, fields: PublishedField[], patientCaller: boolean): Static<typeof PatientProfile> {
  const { id, organization_id, email, first_name, last_name, date_of_birth, phone, updated_at } = row;
  const { sex, address_line1, address_line2, city, region, postal_code, country, preferred_language, external_record_number } = row;
  return {
    patient_id: id,
    organization_id,
    email,
    first_name,
    last_name,
    date_of_birth,
    phone,
    sex: sex as Static<typeof PatientProfile>['sex'],
    address_line1,
    address_line2,
    city,
    region,
    postal_code,
    country,
    preferred_language,
    ...(patientCaller ? {} : { external_record_number }),
    custom_fields: presentValues(row.custom_field_values, fields, patientCaller),
    updated_at,
  };
}

/** The demographics of a body, trimmed and checked; every problem in one 400 validation_error. */
function demographicsOf(body: ProfileBody, current: q.ProfileRow, patientCaller: boolean): Record<q.ProfileColumn, string | null> {
  const text = (v: string | null | undefined) => (typeof v === 'string' ? v.trim() || null : null);
  const out = Object.fromEntries(q.PROFILE_COLUMNS.map((c) => [c, text(body[c])])) as Record<q.ProfileColumn, string | null>;
  const problems: Record<string, string> = {};
  if (out.country) {
    out.country = out.country.toUpperCase();
    if (!isCountryCode(out.country)) problems.country = 'an ISO 3166-1 alpha-2 country code such as RO or US';
  }
  if (out.preferred_language) {
    out.preferred_language = canonicalLanguage(out.preferred_language);
    if (!out.preferred_language) problems.preferred_language = 'a BCP 47 language tag such as ro or en-GB';
  }
  // The clinic's record number is staff business: a patient caller's value is dropped, the stored one kept.
  if (patientCaller) out.external_record_number = current.external_record_number;
  if (Object.keys(problems).length) throw errors.validation(problems);
  return out;
}

export async function getProfile(tx: Queryable, orgId: string, id: string, patientCaller: boolean) {
  const row = await q.findProfile(tx, orgId, id);
  if (!row) throw notFound();
  return present(row, await publishedFieldsOf(tx, orgId, 'patient'), patientCaller);
}

/**
 * PUT /v1/patients/{id}/profile: the whole profile (fields left out are cleared), by staff with
 * patients.update_org or by the patient itself. Staff notes are not part of it and stay as they are.
 */
export async function putProfile(tx: Queryable, actor: OrgActor, id: string, body: ProfileBody, patientCaller: boolean) {
  const current = await q.findProfile(tx, actor.orgId, id, true);
  if (!current) throw notFound();
  const fields = await publishedFieldsOf(tx, actor.orgId, 'patient');
  const { notes: _notes, ...record } = recordOf(
    { ...body, notes: current.notes },
    current,
    fields,
    patientCaller,
    await clinicCountry(tx, actor.orgId),
  );
  const next: q.ProfileInput = { ...record, ...demographicsOf(body, current, patientCaller) };
  const changed = (Object.keys(next) as (keyof q.ProfileInput)[]).filter(
    (k) => JSON.stringify(next[k]) !== JSON.stringify(k === 'custom_field_values' ? current.custom_field_values : current[k]),
  );
  if (changed.length) {
    await q.updateProfile(tx, actor.orgId, id, next);
    const names = changed.map((k) => (k === 'custom_field_values' ? 'custom_fields' : k));
    // Which fields changed, never their values (the audit trail must not keep what erasure removes).
    await audit(tx, actor, 'patient.profile_updated', 'patient', id, { fields: names, by_patient: patientCaller });
    await emit(tx, actor.orgId, 'patient.updated', { id, fields: names });
  }
  return getProfile(tx, actor.orgId, id, patientCaller);
}
