import { DateRangeQuery, ListQueryWith, SortParam, Timestamp, Uuid, nullable } from '@clinic/http-kit';
import { Type } from 'typebox';

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
  q: Type.Optional(Type.String({ maxLength: 200, description: 'Case-insensitive substring of the name or phone.' })),
  ...DateRangeQuery('created_at'),
});
export const PatientParams = Type.Object({ id: Uuid });
