import { DateRangeQuery, ListQueryWith, SortParam, Timestamp, Uuid, nullable } from '@clinic/http-kit';
import { Type } from 'typebox';

export const SPECIALTY_SORT = { name: 'lower(name)', code: 'code', created_at: 'created_at' } as const;

export const Specialty = Type.Object(
  {
    id: Uuid,
    organization_id: Uuid,
    code: Type.String({ description: 'Unique in the organization; lower case letters, digits, "-" and "_".' }),
    name: Type.String(),
    description: nullable(Type.String()),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Specialty' },
);

const fields = {
  code: Type.String({
    minLength: 1,
    maxLength: 64,
    description: 'Short code, unique in the organization (case-insensitive, stored lower case), e.g. "physio".',
    examples: ['physio'],
  }),
  name: Type.String({ minLength: 1, maxLength: 200, description: 'Trimmed.', examples: ['Physiotherapy'] }),
  description: nullable(Type.String({ maxLength: 2000, description: 'null or an empty string clears it.' })),
};

export const CreateSpecialtyBody = Type.Object(
  { code: fields.code, name: fields.name, description: Type.Optional(fields.description) },
  { additionalProperties: false },
);
export const UpdateSpecialtyBody = Type.Object(
  { code: Type.Optional(fields.code), name: Type.Optional(fields.name), description: Type.Optional(fields.description) },
  { additionalProperties: false, description: 'Only the fields to change.' },
);
export const SpecialtyListQuery = ListQueryWith({
  sort: SortParam(SPECIALTY_SORT),
  q: Type.Optional(Type.String({ maxLength: 200, description: 'Case-insensitive substring of the name or code.' })),
  ...DateRangeQuery('created_at'),
});
export const SpecialtyParams = Type.Object({ id: Uuid });
