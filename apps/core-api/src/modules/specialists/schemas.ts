import { DateRangeQuery, ListQueryWith, SortParam, Timestamp, Uuid, nullable } from '@clinic/http-kit';
import { Type } from 'typebox';
import { IncludeDeletedQuery } from '../../platform/deleted.ts';

export const SPECIALIST_SORT = { display_name: 'lower(display_name)', created_at: 'created_at' } as const;

export const Specialist = Type.Object(
  {
    id: Uuid,
    organization_id: Uuid,
    user_id: Type.Optional(Uuid),
    display_name: Type.String(),
    title: nullable(Type.String()),
    bio: nullable(Type.String()),
    contact_email: Type.Optional(nullable(Type.String({ description: 'Staff only: absent for patient callers (spec 5.8).' }))),
    contact_phone: Type.Optional(nullable(Type.String({ description: 'Staff only: absent for patient callers (spec 5.8).' }))),
    custom_fields: Type.Record(Type.String(), Type.Unknown()),
    languages: Type.Array(Type.String(), { description: 'Languages spoken, BCP 47 tags.' }),
    bookable_online: Type.Boolean({ description: 'Whether the public booking page may list the specialist.' }),
    specialty_ids: Type.Array(Uuid, { description: 'Specialties held (GET /v1/specialties).' }),
    location_ids: Type.Array(Uuid, { description: 'Locations the specialist works at; availability rules name one of these.' }),
    service_ids: Type.Array(Uuid, {
      description: 'Services the specialist delivers (set on the service). A patient sees only the public ones.',
    }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Specialist' },
);

const profile = {
  display_name: Type.String({ minLength: 1, maxLength: 200 }),
  title: Type.Optional(nullable(Type.String({ maxLength: 200 }))),
  bio: Type.Optional(nullable(Type.String({ maxLength: 5000 }))),
  contact_email: Type.Optional(nullable(Type.String({ maxLength: 320 }))),
  contact_phone: Type.Optional(nullable(Type.String({ maxLength: 40 }))),
  custom_fields: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), { description: '{ key: value } of published specialist fields.' }),
  ),
  languages: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 35 }), { maxItems: 20, description: 'BCP 47 tags such as ro or en-GB.' }),
  ),
  bookable_online: Type.Optional(Type.Boolean({ description: 'specialists.update_org. Default false.' })),
  specialty_ids: Type.Optional(Type.Array(Uuid, { maxItems: 50, description: 'specialists.update_org. The whole set.' })),
  location_ids: Type.Optional(
    Type.Array(Uuid, {
      maxItems: 100,
      description: 'specialists.update_org. The whole set; 409 location_in_use when availability still uses a dropped location.',
    }),
  ),
};

export const CreateSpecialistBody = Type.Object({ user_id: Uuid, ...profile }, { additionalProperties: false });
export const PutSpecialistBody = Type.Object(
  { ...profile, id: Type.Optional(Type.String()), user_id: Type.Optional(Type.String()), organization_id: Type.Optional(Type.String()) },
  {
    additionalProperties: false,
    description: 'The whole profile: optional fields left out are cleared. user_id and organization_id never change.',
  },
);
export const SpecialistListQuery = ListQueryWith({
  sort: SortParam(SPECIALIST_SORT),
  q: Type.Optional(Type.String({ maxLength: 200, description: 'Case-insensitive substring of the name or title.' })),
  specialty_id: Type.Optional(Uuid),
  location_id: Type.Optional(Uuid),
  service_id: Type.Optional(Uuid),
  language: Type.Optional(Type.String({ maxLength: 35, description: 'A BCP 47 tag the specialist speaks (exact tag).' })),
  ...DateRangeQuery('created_at'),
  ...IncludeDeletedQuery,
});
export const SpecialistParams = Type.Object({ id: Uuid });

const Gender = Type.Union([Type.Literal('female'), Type.Literal('male'), Type.Literal('other'), Type.Literal('unknown')]);
const QualificationSchema = Type.Object(
  {
    title: Type.String({ minLength: 1, maxLength: 200, description: 'A degree, board certification or licence.' }),
    institution: Type.Optional(nullable(Type.String({ maxLength: 200 }))),
    year: Type.Optional(nullable(Type.Integer({ minimum: 1900, maximum: 2200 }))),
  },
  { additionalProperties: false },
);

/** The professional profile (FHIR Practitioner in spirit): what a patient may read about a specialist. */
export const SpecialistProfile = Type.Object(
  {
    specialist_id: Uuid,
    organization_id: Uuid,
    display_name: Type.String(),
    title: nullable(Type.String()),
    bio: nullable(Type.String()),
    languages: Type.Array(Type.String(), { description: 'Languages spoken, BCP 47 tags.' }),
    gender: nullable(Gender),
    registration_number: nullable(Type.String({ description: 'Licence or registration number of the professional body.' })),
    qualifications: Type.Array(Type.Object({ title: Type.String(), institution: nullable(Type.String()), year: nullable(Type.Integer()) })),
    practising_since: nullable(Type.Integer({ description: 'The year the specialist started practising.' })),
    booking_note: nullable(Type.String({ description: 'Shown on the public booking page.' })),
    custom_fields: Type.Record(Type.String(), Type.Unknown()),
    updated_at: Timestamp,
  },
  { $id: 'SpecialistProfile' },
);

export const PutSpecialistProfileBody = Type.Object(
  {
    display_name: profile.display_name,
    title: profile.title,
    bio: profile.bio,
    languages: profile.languages,
    gender: Type.Optional(nullable(Gender)),
    registration_number: Type.Optional(nullable(Type.String({ maxLength: 64 }))),
    qualifications: Type.Optional(Type.Array(QualificationSchema, { maxItems: 30 })),
    practising_since: Type.Optional(nullable(Type.Integer({ minimum: 1900, maximum: 2200 }))),
    booking_note: Type.Optional(nullable(Type.String({ maxLength: 1000 }))),
    custom_fields: profile.custom_fields,
  },
  {
    additionalProperties: false,
    description:
      'The whole professional profile: fields left out are cleared. Contact details, links and bookable_online belong to the record (PUT /v1/specialists/{id}).',
  },
);
