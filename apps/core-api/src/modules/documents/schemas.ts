import { Timestamp, Uuid } from '@clinic/http-kit';
import { Type } from 'typebox';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

export const Document = Type.Object(
  {
    id: Uuid,
    organization_id: Uuid,
    kind: Type.Union([
      Type.Literal('form'),
      Type.Literal('visit_summary'),
      Type.Literal('prescription'),
      Type.Literal('report'),
      Type.Literal('receipt'),
    ]),
    source: Type.Union([Type.Literal('form'), Type.Literal('appointment')]),
    form_id: Nullable(Uuid),
    appointment_id: Nullable(Uuid),
    patient_id: Uuid,
    pdf_template_id: Uuid,
    template_version: Type.Integer({ minimum: 1 }),
    title: Type.String(),
    source_sha256: Type.String({ description: 'SHA-256 of what it was made from (a form: its snapshot, docs/documents.md).' }),
    status: Type.Union([Type.Literal('queued'), Type.Literal('rendering'), Type.Literal('ready'), Type.Literal('failed')]),
    progress: Type.Integer({ minimum: 0, maximum: 100 }),
    error: Nullable(Type.String()),
    size_bytes: Nullable(Type.Integer()),
    sha256: Nullable(Type.String({ description: "SHA-256 of the PDF's bytes." })),
    page_count: Nullable(Type.Integer()),
    published_at: Nullable(Timestamp),
    created_at: Timestamp,
    rendered_at: Nullable(Timestamp),
  },
  { $id: 'Document' },
);

export const RenderFormBody = Type.Object(
  {
    pdf_template_id: Uuid,
    title: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "Default: the template version's name." })),
  },
  { additionalProperties: false },
);

const Item = Type.Record(Type.String({ pattern: '^[a-z][a-z0-9_]{0,39}$' }), Type.String({ maxLength: 2000 }), {
  description: "One row of the template's items table, by column key.",
});
export const AppointmentDocumentBody = Type.Object(
  {
    pdf_template_id: Uuid,
    title: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    body: Type.Optional(Type.String({ maxLength: 20_000, description: 'Text for {{document.body}}.' })),
    items: Type.Optional(
      Type.Array(Item, { maxItems: 500, description: "Rows of the items block (a prescription's lines, a receipt's)." }),
    ),
  },
  { additionalProperties: false },
);

export const DownloadLink = Type.Object(
  { url: Type.String({ description: 'GET it without credentials until expires_at.' }), expires_at: Timestamp },
  { $id: 'DocumentDownloadLink' },
);

export const IdParams = Type.Object({ id: Uuid });
export const SignedParams = Type.Object({
  id: Uuid,
  expires: Type.String({ maxLength: 12 }),
  signature: Type.String({ maxLength: 100 }),
  name: Type.String({ maxLength: 200 }),
});
