import { DateRangeQuery, ListQueryWith, SortParam, Timestamp, Uuid } from '@clinic/http-kit';
import { Type } from 'typebox';
import { IncludeDeletedQuery } from '../../platform/deleted.ts';
import type { Layout } from '../documents/render/layout.ts';

export const TEMPLATE_SORT = { name: 'lower(name)', created_at: 'created_at' } as const;

const Text = (max: number, description?: string) => Type.String({ maxLength: max, ...(description ? { description } : {}) });
const Kind = Type.Union(
  [Type.Literal('form'), Type.Literal('visit_summary'), Type.Literal('prescription'), Type.Literal('report'), Type.Literal('receipt')],
  { description: 'form (POST /v1/forms/{id}/render), or an appointment document: visit_summary, prescription, report, receipt.' },
);
const closed = { additionalProperties: false } as const;

/** The blocks of the template language (docs/documents.md). */
const Block = Type.Union([
  Type.Object({ type: Type.Literal('heading'), text: Text(300), level: Type.Optional(Type.Integer({ minimum: 1, maximum: 3 })) }, closed),
  Type.Object(
    {
      type: Type.Literal('text'),
      text: Text(5000),
      size: Type.Optional(Type.Union([Type.Literal('small'), Type.Literal('normal'), Type.Literal('large')])),
      bold: Type.Optional(Type.Boolean()),
      align: Type.Optional(Type.Union([Type.Literal('left'), Type.Literal('center'), Type.Literal('right')])),
    },
    closed,
  ),
  Type.Object(
    {
      type: Type.Literal('fields'),
      rows: Type.Array(Type.Object({ label: Text(200), value: Text(1000) }, closed), { minItems: 1, maxItems: 40 }),
    },
    closed,
  ),
  Type.Object({ type: Type.Literal('answers'), question_label: Type.Optional(Text(100)), answer_label: Type.Optional(Text(100)) }, closed),
  Type.Object(
    {
      type: Type.Literal('items'),
      columns: Type.Array(
        Type.Object(
          {
            key: Type.String({ pattern: '^[a-z][a-z0-9_]{0,39}$' }),
            label: Text(100),
            width: Type.Optional(Type.Integer({ minimum: 1, maximum: 10, description: 'Relative width (default 1).' })),
          },
          closed,
        ),
        { minItems: 1, maxItems: 8 },
      ),
    },
    closed,
  ),
  Type.Object({ type: Type.Literal('signature') }, closed),
  Type.Object({ type: Type.Literal('page_break') }, closed),
  Type.Object({ type: Type.Literal('divider') }, closed),
  Type.Object(
    {
      type: Type.Literal('spacer'),
      size: Type.Optional(Type.Union([Type.Literal('small'), Type.Literal('medium'), Type.Literal('large')])),
    },
    closed,
  ),
]);

export const LayoutSchema = Type.Object(
  {
    page: Type.Optional(
      Type.Object(
        {
          size: Type.Optional(Type.Union([Type.Literal('A4'), Type.Literal('Letter')])),
          orientation: Type.Optional(Type.Union([Type.Literal('portrait'), Type.Literal('landscape')])),
        },
        closed,
      ),
    ),
    letterhead: Type.Optional(Type.Boolean({ description: "Print the organization's letterhead on top (default true)." })),
    footer: Type.Optional(Text(300, 'Left part of every footer; the page number "n / N" is on the right.')),
    blocks: Type.Array(Block, { minItems: 1, maxItems: 100 }),
  },
  { ...closed, description: 'The layout: blocks whose texts may hold {{placeholders}} of the kind (docs/documents.md).' },
);

const Name = Type.String({ minLength: 1, maxLength: 200 });
const Description = Type.Union([Type.String({ maxLength: 2000 }), Type.Null()]);

const Content = {
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  kind: Kind,
  layout: Type.Unsafe<Layout>({ type: 'object', additionalProperties: true, description: 'The layout, with defaults filled in.' }),
};

export const PdfTemplate = Type.Object(
  {
    id: Uuid,
    organization_id: Uuid,
    ...Content,
    version: Type.Integer({ minimum: 0, description: 'The last published version (0: never published).' }),
    published: Type.Boolean({ description: 'false: a draft; documents use the last published version.' }),
    published_at: Timestamp,
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'PdfTemplate' },
);

export const PdfTemplateVersion = Type.Object(
  { version: Type.Integer({ minimum: 1 }), published_at: Timestamp, template: Type.Object(Content) },
  { $id: 'PdfTemplateVersion' },
);

export const CreatePdfTemplateBody = Type.Object(
  {
    name: Name,
    description: Type.Optional(Description),
    kind: Kind,
    layout: LayoutSchema,
    draft: Type.Optional(
      Type.Boolean({ description: 'true: created as a draft (version 0); nothing renders with it until it is published.' }),
    ),
  },
  { additionalProperties: false },
);
export const UpdatePdfTemplateBody = Type.Object(
  { name: Type.Optional(Name), description: Type.Optional(Description), kind: Type.Optional(Kind), layout: Type.Optional(LayoutSchema) },
  { additionalProperties: false, description: 'Only what changes. The template becomes (or stays) a draft.' },
);

export const PdfTemplateListQuery = ListQueryWith({
  sort: SortParam(TEMPLATE_SORT),
  kind: Type.Optional(Type.String({ maxLength: 40, description: 'One kind.' })),
  published: Type.Optional(Type.String({ description: 'true: published templates only; false: drafts only.' })),
  q: Type.Optional(Type.String({ maxLength: 200, description: 'Case-insensitive substring of the name.' })),
  ...DateRangeQuery('created_at'),
  ...IncludeDeletedQuery,
});
export const PdfTemplateIdParams = Type.Object({ id: Uuid });

export const Placeholder = Type.Object(
  { path: Type.String(), description: Type.String(), kinds: Type.Array(Kind) },
  { $id: 'PdfTemplatePlaceholder' },
);

export const Letterhead = Type.Object(
  {
    organization_id: Uuid,
    name: Type.String(),
    address_lines: Type.Array(Type.String()),
    registration_numbers: Type.Array(Type.String()),
    logo: Type.Union([Type.Object({ content_type: Type.String(), sha256: Type.String() }), Type.Null()]),
    updated_at: Type.Union([Timestamp, Type.Null()]),
  },
  { $id: 'DocumentLetterhead' },
);
export const PutLetterheadBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    address_lines: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 4 })),
    registration_numbers: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 6, description: 'e.g. tax id, trade register, licence.' }),
    ),
  },
  { additionalProperties: false },
);
