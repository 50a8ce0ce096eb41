import { DateRangeQuery, ListQueryWith, SortParam, Timestamp, Uuid } from '@clinic/http-kit';
import { Type } from 'typebox';
import { IncludeDeletedQuery } from '../../platform/deleted.ts';
import { ENTITY_TYPES, FIELD_TYPES } from './definition.ts';

export const FIELD_SORT = { key: 'key', label: 'lower(label)', created_at: 'created_at' } as const;

const FieldType = Type.Union(
  FIELD_TYPES.map((t) => Type.Literal(t)),
  { description: 'Values are validated by type; select types take their options.' },
);
const EntityType = Type.Union(
  ENTITY_TYPES.map((t) => Type.Literal(t)),
  { description: 'What the field describes: a patient or specialist record, or a form.' },
);
const Key = Type.String({
  minLength: 1,
  maxLength: 63,
  description: 'a-z, 0-9 and _, starting with a letter; may change between versions.',
  examples: ['allergies'],
});
const Label = Type.String({ minLength: 1, maxLength: 200 });
const Options = Type.Array(Type.String({ maxLength: 200 }), {
  maxItems: 200,
  description: 'The choices of select and multi_select fields; empty otherwise.',
});
const Private = Type.Boolean({ description: 'Staff only: stripped from every answer to a patient (spec 5.8).' });

export const FieldDefinitionSchema = Type.Object({
  key: Type.String(),
  label: Type.String(),
  field_type: Type.String(),
  options: Type.Array(Type.String()),
  private: Type.Boolean(),
});

export const CustomField = Type.Object(
  {
    id: Uuid,
    organization_id: Uuid,
    entity_type: Type.String(),
    key: Type.String(),
    label: Type.String(),
    field_type: Type.String(),
    options: Type.Array(Type.String()),
    private: Type.Boolean(),
    system_key: Type.Union([Type.String(), Type.Null()], { description: 'Set for system fields; never changes across versions.' }),
    version: Type.Integer({ minimum: 1, description: 'The last published version number; a draft keeps it until it is published.' }),
    published: Type.Boolean({
      description: 'false: a draft, edited in place; new forms and records still use the last published version.',
    }),
    published_at: Timestamp,
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'CustomField' },
);

export const CustomFieldVersion = Type.Object(
  { version: Type.Integer({ minimum: 1 }), published_at: Timestamp, fields: FieldDefinitionSchema },
  { $id: 'CustomFieldVersion' },
);

export const CreateFieldBody = Type.Object(
  {
    entity_type: EntityType,
    key: Key,
    label: Label,
    field_type: FieldType,
    options: Type.Optional(Options),
    private: Type.Optional(Private),
    system_key: Type.Optional(
      Type.String({ pattern: '^[a-z][a-z0-9_.]{0,62}$', description: 'Marks a system field; fixed for the life of the field.' }),
    ),
  },
  { additionalProperties: false },
);

export const UpdateFieldBody = Type.Object(
  {
    key: Type.Optional(Key),
    label: Type.Optional(Label),
    field_type: Type.Optional(FieldType),
    options: Type.Optional(Options),
    private: Type.Optional(Private),
  },
  {
    additionalProperties: false,
    description: 'Only the fields to change. The field becomes (or stays) a draft; system_key and entity_type never change.',
  },
);

export const FieldListQuery = ListQueryWith({
  sort: SortParam(FIELD_SORT),
  entity_type: Type.Optional(Type.String({ description: 'patient, specialist or form.' })),
  published: Type.Optional(Type.String({ description: 'true: published fields only; false: drafts only.' })),
  q: Type.Optional(Type.String({ maxLength: 200, description: 'Case-insensitive substring of the key or the label.' })),
  ...DateRangeQuery('created_at'),
  ...IncludeDeletedQuery,
});

export const IdParams = Type.Object({ id: Uuid });
