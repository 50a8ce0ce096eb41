import { DateRangeQuery, ListQueryWith, SortParam, Timestamp, Uuid, nullable } from '@clinic/http-kit';
import { Type } from 'typebox';
import { IncludeDeletedQuery } from '../../platform/deleted.ts';

export const FORM_SORT = { created_at: 'created_at', title: 'lower(title)', status: 'status' } as const;

const Values = Type.Record(Type.String(), Type.Unknown(), {
  description: "{ key: value } by the keys of the form's field snapshots; null clears.",
});

export const FieldSnapshot = Type.Object(
  {
    custom_field_id: Type.Optional(Uuid),
    version: Type.Integer({ minimum: 1 }),
    key: Type.String(),
    label: Type.String(),
    field_type: Type.String(),
    options: Type.Array(Type.String()),
    required: Type.Boolean(),
    private: Type.Optional(Type.Boolean()),
  },
  { $id: 'FormFieldSnapshot', description: 'The field as it was when the form was created (spec 2.10); never changes.' },
);

export const Form = Type.Object(
  {
    id: Uuid,
    organization_id: Uuid,
    patient_id: Uuid,
    form_template_id: Uuid,
    template_version: Type.Integer({ minimum: 1 }),
    title: Type.String(),
    status: Type.Union([Type.Literal('pending'), Type.Literal('signed')]),
    fields: Type.Array(FieldSnapshot),
    values: Values,
    created_by_principal_id: Type.Optional(Uuid),
    signed_at: nullable(Timestamp),
    signed_by_principal_id: Type.Optional(nullable(Uuid)),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Form', description: 'For patient callers, private fields and their values and internal identifiers are absent (spec 5.8).' },
);

export const FormSummary = Type.Object(
  {
    id: Uuid,
    patient_id: Uuid,
    form_template_id: Uuid,
    template_version: Type.Integer(),
    title: Type.String(),
    status: Type.String(),
    signed_at: nullable(Timestamp),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'FormSummary' },
);

export const CreateFormBody = Type.Object(
  { form_template_id: Uuid, patient_id: Uuid, values: Type.Optional(Values) },
  { additionalProperties: false },
);

/** Ownership fields are accepted so that they can be dropped silently for patient callers (spec 5.8). */
export const FillFormBody = Type.Object(
  {
    values: Values,
    patient_id: Type.Optional(Type.String({ description: 'Ownership field: dropped for patient callers; a form never changes patient.' })),
    organization_id: Type.Optional(Type.String({ description: 'Ownership field: dropped for patient callers.' })),
    status: Type.Optional(Type.String({ description: 'Ignored for patient callers; sign with POST /v1/forms/{id}/sign.' })),
  },
  { additionalProperties: false },
);

export const FormFile = Type.Object(
  {
    id: Uuid,
    form_id: Uuid,
    filename: Type.String(),
    content_type: Type.String(),
    size_bytes: Type.Integer(),
    sha256: Type.String(),
    created_at: Timestamp,
  },
  { $id: 'FormFile' },
);

export const FormListQuery = ListQueryWith({
  sort: SortParam(FORM_SORT),
  patient_id: Type.Optional(Type.String()),
  status: Type.Optional(Type.String({ description: 'pending or signed.' })),
  form_template_id: Type.Optional(Type.String()),
  ...DateRangeQuery('created_at'),
  ...IncludeDeletedQuery,
});
export const FormParams = Type.Object({ id: Uuid });
export const FileParams = Type.Object({ id: Uuid, fileId: Uuid });
