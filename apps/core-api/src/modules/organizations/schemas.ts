import { DateRangeQuery, ListQueryWith, SortParam, Timestamp, Uuid } from '@clinic/http-kit';
import { Type } from 'typebox';
import { ORGANIZATION_SORT } from './service.ts';

const LANGUAGE_DOC =
  'Stored as given (no value constraint beyond 1 to 35 characters, spec 2.5). Front-ends render en and ro and fall back to en for anything else.';

export const Organization = Type.Object(
  {
    id: Uuid,
    slug: Type.String(),
    name: Type.String(),
    language_code: Type.String({ description: LANGUAGE_DOC }),
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

// The table's checks, as schemas: a bad value is a 400 naming the field, never a 500 from the database.
const fields = {
  // At least one non-space character: a name of blanks renders as nothing in every picker.
  name: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' }),
  slug: Type.String({
    pattern: '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$',
    description: 'lowercase letters, digits and hyphens; used by resolve',
  }),
  language_code: Type.String({ minLength: 1, maxLength: 35, description: LANGUAGE_DOC }),
};

export const CreateOrganizationBody = Type.Object(
  {
    name: fields.name,
    slug: fields.slug,
    language_code: Type.Optional(Type.String({ ...fields.language_code, description: `Default en. ${LANGUAGE_DOC}` })),
  },
  { additionalProperties: false },
);

const CalendarTitleField = Type.Union([Type.Literal('clinic'), Type.Literal('clinic_and_service'), Type.Literal('full')], {
  description:
    "What appointments' calendar entries (.ics feeds, downloads, message attachments) say in their title: the clinic's name only (clinic, the default), with the service (clinic_and_service), or with the service and the specialist (full). Entries are always CLASS:PRIVATE. Changed with PATCH /v1/organizations/{id}.",
});

export const UpdateOrganizationBody = Type.Object(
  {
    name: Type.Optional(fields.name),
    slug: Type.Optional(fields.slug),
    language_code: Type.Optional(fields.language_code),
    calendar_title: Type.Optional(CalendarTitleField),
  },
  { additionalProperties: false, description: 'Only the fields to change (at least one).' },
);

export const OrganizationListQuery = ListQueryWith({
  sort: SortParam(ORGANIZATION_SORT),
  q: Type.Optional(Type.String({ maxLength: 200, description: 'Case-insensitive substring of the name or the slug.' })),
  ...DateRangeQuery('created_at'),
});

export const OrganizationSettings = Type.Object(
  {
    organization_id: Uuid,
    language_code: Type.String({
      description: `The organization's language_code (edited with PATCH /v1/organizations/{id}). ${LANGUAGE_DOC}`,
    }),
    default_timezone: Type.String({ description: 'IANA time zone name used where no location gives one; default UTC.' }),
    calendar_title: CalendarTitleField,
    updated_at: Timestamp,
  },
  { $id: 'OrganizationSettings', description: 'updated_at is the last change to any field shown here (settings row or organization).' },
);
