import { DateRangeQuery, ListQueryWith, SortParam, Timestamp, Uuid } from '@clinic/http-kit';
import { Type } from 'typebox';
import { IncludeDeletedQuery } from '../../platform/deleted.ts';

export const TEMPLATE_SORT = { name: 'lower(name)', created_at: 'created_at' } as const;

const TemplateFieldSchema = Type.Object(
  { custom_field_id: Uuid, required: Type.Boolean({ description: 'A value is needed before the form can be signed.' }) },
  { additionalProperties: false },
);
const TemplateFieldInput = Type.Object(
  {
    custom_field_id: Uuid,
    required: Type.Optional(Type.Boolean({ default: false, description: 'A value is needed before the form can be signed.' })),
  },
  { additionalProperties: false },
);
const Fields = Type.Array(TemplateFieldInput, {
  minItems: 1,
  maxItems: 200,
  description: 'Custom fields of entity type `form`, in display order.',
});
const Name = Type.String({ minLength: 1, maxLength: 200 });
const Description = Type.Union([Type.String({ maxLength: 2000 }), Type.Null()]);

const Content = {
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  fields: Type.Array(TemplateFieldSchema),
};

export const FormTemplate = Type.Object(
  {
    id: Uuid,
    organization_id: Uuid,
    ...Content,
    version: Type.Integer({ minimum: 1 }),
    published: Type.Boolean({ description: 'false: a draft; new forms use the last published version.' }),
    published_at: Timestamp,
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'FormTemplate' },
);

export const FormTemplateVersion = Type.Object(
  { version: Type.Integer({ minimum: 1 }), published_at: Timestamp, template: Type.Object(Content) },
  { $id: 'FormTemplateVersion' },
);

export const CreateTemplateBody = Type.Object(
  { name: Name, description: Type.Optional(Description), fields: Fields },
  { additionalProperties: false },
);
export const UpdateTemplateBody = Type.Object(
  { name: Type.Optional(Name), description: Type.Optional(Description), fields: Type.Optional(Fields) },
  { additionalProperties: false, description: 'Only what changes. The template becomes (or stays) a draft.' },
);

export const TemplateListQuery = ListQueryWith({
  sort: SortParam(TEMPLATE_SORT),
  published: Type.Optional(Type.String({ description: 'true: published templates only; false: drafts only.' })),
  q: Type.Optional(Type.String({ maxLength: 200, description: 'Case-insensitive substring of the name.' })),
  ...DateRangeQuery('created_at'),
  ...IncludeDeletedQuery,
});
export const TemplateIdParams = Type.Object({ id: Uuid });
