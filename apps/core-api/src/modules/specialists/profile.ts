import type { Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';
import type { Static } from 'typebox';
import type { OrgActor } from '../../platform/actor.ts';
import { audit } from '../../platform/audit.ts';
import type { PublishedField } from '../custom-fields/queries.ts';
import { presentValues, publishedFieldsOf, replaceValues } from '../custom-fields/values.ts';
import { emit } from '../events/emit.ts';
import * as q from './queries.ts';
import type { PutSpecialistProfileBody, SpecialistProfile } from './schemas.ts';
import { editableSpecialist, languagesOf, readableSpecialist } from './service.ts';

type ProfileBody = Static<typeof PutSpecialistProfileBody>;

/** The professional profile; a patient caller gets no private custom fields (spec 5.8). Never contact data. */
function present(row: q.SpecialistRow, fields: PublishedField[], patientCaller: boolean): Static<typeof SpecialistProfile> {
  return {
    specialist_id: row.id,
    organization_id: row.organization_id,
    display_name: row.display_name,
    title: row.title,
    bio: row.bio,
    languages: row.languages,
    gender: row.gender as Static<typeof SpecialistProfile>['gender'],
    registration_number: row.registration_number,
    qualifications: row.qualifications,
    practising_since: row.practising_since,
    booking_note: row.booking_note,
    custom_fields: presentValues(row.custom_field_values, fields, patientCaller),
    updated_at: row.updated_at,
  };
}

export async function getSpecialistProfile(tx: Queryable, orgId: string, id: string, patientCaller: boolean) {
  const row = await readableSpecialist(tx, orgId, id);
  return present(row, await publishedFieldsOf(tx, orgId, 'specialist'), patientCaller);
}

/** The profile of a body, trimmed and checked; every problem in one 400 validation_error. */
function profileOf(body: ProfileBody, current: q.SpecialistRow, fields: PublishedField[]): q.ProfessionalProfile {
  const text = (v: string | null | undefined) => (typeof v === 'string' ? v.trim() || null : null);
  const problems: Record<string, string> = {};
  const display = body.display_name.trim();
  if (!display) problems.display_name = 'must not be blank';
  const qualifications = (body.qualifications ?? []).map((x, i) => {
    const title = x.title.trim();
    if (!title) problems[`qualifications.${i}.title`] = 'must not be blank';
    return { title, institution: text(x.institution), year: x.year ?? null };
  });
  const since = body.practising_since ?? null;
  if (since !== null && since > new Date().getUTCFullYear()) problems.practising_since = 'must not be a future year';
  if (Object.keys(problems).length) throw errors.validation(problems);
  return {
    display_name: display,
    title: text(body.title),
    bio: text(body.bio),
    languages: languagesOf(body.languages),
    gender: body.gender ?? null,
    registration_number: text(body.registration_number),
    qualifications,
    practising_since: since,
    booking_note: text(body.booking_note),
    custom_field_values: replaceValues(current.custom_field_values, body.custom_fields ?? {}, fields, false),
  };
}

/**
 * PUT /v1/specialists/{id}/profile: the whole professional profile (fields left out are cleared), by
 * specialists.update_org or by the specialist itself with specialists.update_self. Contact details,
 * links and the booking flag belong to the record (PUT /v1/specialists/{id}) and stay as they are.
 */
export async function putSpecialistProfile(tx: Queryable, actor: OrgActor, id: string, body: ProfileBody) {
  const current = await editableSpecialist(tx, actor, id);
  const fields = await publishedFieldsOf(tx, actor.orgId, 'specialist');
  const next = profileOf(body, current, fields);
  const changed = (Object.keys(next) as (keyof q.ProfessionalProfile)[]).filter(
    (k) => JSON.stringify(next[k]) !== JSON.stringify(current[k]),
  );
  if (changed.length) {
    await q.updateProfessionalProfile(tx, actor.orgId, id, next);
    const names = changed.map((k) => (k === 'custom_field_values' ? 'custom_fields' : k));
    // Which fields changed, never their values.
    await audit(tx, actor, 'specialist.profile_updated', 'specialist', id, { fields: names });
    await emit(tx, actor.orgId, 'specialist.updated', { id, fields: names });
  }
  return getSpecialistProfile(tx, actor.orgId, id, false);
}
