import { DateRangeQuery, ListQueryWith, SortParam, Timestamp, Uuid, nullable } from '@clinic/http-kit';
import { Type } from 'typebox';

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
  ...DateRangeQuery('created_at'),
});
export const SpecialistParams = Type.Object({ id: Uuid });
