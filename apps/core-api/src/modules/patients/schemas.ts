import { DateRangeQuery, ListQueryWith, SortParam, Timestamp, Uuid, nullable } from '@clinic/http-kit';
import { Type } from 'typebox';
import { IncludeDeletedQuery } from '../../platform/deleted.ts';

export const PATIENT_SORT = { last_name: 'lower(last_name)', first_name: 'lower(first_name)', created_at: 'created_at' } as const;

export const Patient = Type.Object(
  {
    id: Uuid,
    organization_id: Uuid,
    user_id: Type.Optional(Uuid),
    email: nullable(Type.String()),
    first_name: nullable(Type.String()),
    last_name: nullable(Type.String()),
    date_of_birth: nullable(Type.String({ format: 'date' })),
    phone: nullable(Type.String()),
    notes: Type.Optional(nullable(Type.String({ description: 'Staff only: absent for patient callers.' }))),
    profile_shared: Type.Boolean(),
    custom_fields: Type.Record(Type.String(), Type.Unknown(), {
      description: '{ key: value } of the published patient fields; private ones absent for patient callers.',
    }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Patient' },
);

const record = {
  first_name: Type.Optional(nullable(Type.String({ maxLength: 100 }))),
  last_name: Type.Optional(nullable(Type.String({ maxLength: 100 }))),
  date_of_birth: Type.Optional(nullable(Type.String({ maxLength: 10, description: 'YYYY-MM-DD' }))),
  phone: Type.Optional(nullable(Type.String({ maxLength: 40 }))),
  notes: Type.Optional(nullable(Type.String({ maxLength: 10000, description: 'Staff only; silently dropped from a patient caller.' }))),
  custom_fields: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), { description: '{ key: value } of published patient fields; null clears.' }),
  ),
};

export const CreatePatientBody = Type.Object(
  {
    email: Type.String({ minLength: 3, maxLength: 254, description: 'The person; linked on their first sign-in with this email.' }),
    ...record,
  },
  { additionalProperties: false },
);

/** Ownership fields are accepted so that a patient's client may echo them; they are dropped for patients (spec 5.8). */
export const PutPatientBody = Type.Object(
  {
    ...record,
    id: Type.Optional(Type.String({ description: 'Ownership field: ignored.' })),
    user_id: Type.Optional(Type.String({ description: 'Ownership field: dropped for patient callers; must not change for staff.' })),
    organization_id: Type.Optional(
      Type.String({ description: 'Ownership field: dropped for patient callers; must not change for staff.' }),
    ),
  },
  { additionalProperties: false, description: 'The whole editable record: fields left out are cleared.' },
);

export const PatientListQuery = ListQueryWith({
  sort: SortParam(PATIENT_SORT),
  q: Type.Optional(
    Type.String({
      maxLength: 200,
      description:
        'Trimmed, then a case-insensitive substring of the name ("first last"), the phone or the email of live patients. Three characters or more use the search index; shorter ones read every patient of the organization.',
    }),
  ),
  ...DateRangeQuery('created_at'),
  ...IncludeDeletedQuery,
});
export const PatientParams = Type.Object({ id: Uuid });

const demographics = {
  sex: nullable(Type.Union([Type.Literal('female'), Type.Literal('male'), Type.Literal('other'), Type.Literal('unknown')])),
  address_line1: nullable(Type.String({ maxLength: 200 })),
  address_line2: nullable(Type.String({ maxLength: 200 })),
  city: nullable(Type.String({ maxLength: 100 })),
  region: nullable(Type.String({ maxLength: 100, description: 'State, county or province.' })),
  postal_code: nullable(Type.String({ maxLength: 20 })),
  country: nullable(Type.String({ maxLength: 2, description: 'ISO 3166-1 alpha-2, either case.' })),
  preferred_language: nullable(
    Type.String({ maxLength: 35, description: "BCP 47 tag for messages and documents; null: the organization's language." }),
  ),
  external_record_number: nullable(
    Type.String({ maxLength: 64, description: "The clinic's own record number; staff only, unique among live records." }),
  ),
};

export const PatientProfile = Type.Object(
  {
    patient_id: Uuid,
    organization_id: Uuid,
    email: nullable(Type.String({ description: 'Read-only: the email of the person.' })),
    first_name: nullable(Type.String()),
    last_name: nullable(Type.String()),
    date_of_birth: nullable(Type.String({ format: 'date' })),
    phone: nullable(Type.String()),
    ...demographics,
    external_record_number: Type.Optional(demographics.external_record_number),
    custom_fields: Type.Record(Type.String(), Type.Unknown()),
    updated_at: Timestamp,
  },
  { $id: 'PatientProfile' },
);

export const PutPatientProfileBody = Type.Object(
  {
    first_name: record.first_name,
    last_name: record.last_name,
    date_of_birth: record.date_of_birth,
    phone: record.phone,
    sex: Type.Optional(demographics.sex),
    address_line1: Type.Optional(demographics.address_line1),
    address_line2: Type.Optional(demographics.address_line2),
    city: Type.Optional(demographics.city),
    region: Type.Optional(demographics.region),
    postal_code: Type.Optional(demographics.postal_code),
    country: Type.Optional(demographics.country),
    preferred_language: Type.Optional(demographics.preferred_language),
    external_record_number: Type.Optional(demographics.external_record_number),
    custom_fields: record.custom_fields,
  },
  {
    additionalProperties: false,
    description:
      "The whole profile: fields left out are cleared. external_record_number is staff only (a patient's value is ignored); 409 external_record_number_taken.",
  },
);
