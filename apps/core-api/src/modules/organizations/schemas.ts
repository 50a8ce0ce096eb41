import { Timestamp, Uuid } from '@clinic/http-kit';
import { Type } from 'typebox';

export const Organization = Type.Object(
  {
    id: Uuid,
    slug: Type.String(),
    name: Type.String(),
    language_code: Type.String({ description: 'Stored as given; front-ends render en and ro and fall back to en for anything else.' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Organization' },
);

/** What public resolution shows: the fields a front-end proxy needs to set its cookies (spec 5.12). */
export const PublicOrganization = Type.Object({
  id: Uuid,
  slug: Type.String(),
  name: Type.String(),
  language_code: Type.String(),
});

export const CreateOrganizationBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    slug: Type.String({ pattern: '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$', description: 'lowercase letters, digits and hyphens; used by resolve' }),
    language_code: Type.Optional(Type.String({ minLength: 1, maxLength: 35, description: 'default en' })),
  },
  { additionalProperties: false },
);
