import { DateRangeQuery, ListQueryWith, SortParam, Timestamp, Uuid, nullable } from '@clinic/http-kit';
import { Type } from 'typebox';

/** Public sort fields -> SQL. Names sort case-insensitively. */
export const LOCATION_SORT = { name: 'lower(name)', created_at: 'created_at' } as const;

export const Location = Type.Object(
  {
    id: Uuid,
    organization_id: Uuid,
    name: Type.String(),
    address_line1: nullable(Type.String()),
    address_line2: nullable(Type.String()),
    city: nullable(Type.String()),
    region: nullable(Type.String({ description: 'State, county or province.' })),
    postal_code: nullable(Type.String()),
    country: nullable(Type.String({ description: 'ISO 3166-1 alpha-2, upper case.' })),
    timezone: Type.String({ description: 'IANA time zone name.' }),
    phone: nullable(Type.String()),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Location' },
);

// Text fields: an empty string clears an optional field, as null does. Lengths match the table's checks.
const fields = {
  name: Type.String({ minLength: 1, maxLength: 200, description: 'Unique in the organization (case-insensitive); trimmed.' }),
  address_line1: nullable(Type.String({ maxLength: 200 })),
  address_line2: nullable(Type.String({ maxLength: 200 })),
  city: nullable(Type.String({ maxLength: 100 })),
  region: nullable(Type.String({ maxLength: 100 })),
  postal_code: nullable(Type.String({ maxLength: 20 })),
  country: nullable(Type.String({ maxLength: 2, description: 'ISO 3166-1 alpha-2 code such as RO or US; either case.', examples: ['RO'] })),
  timezone: Type.String({
    minLength: 1,
    maxLength: 64,
    description: 'IANA time zone name such as Europe/Bucharest.',
    examples: ['Europe/Bucharest'],
  }),
  phone: nullable(Type.String({ maxLength: 40, description: 'Digits with optional +, spaces, dots, hyphens, slashes and parentheses.' })),
};

export const CreateLocationBody = Type.Object(
  {
    name: fields.name,
    address_line1: Type.Optional(fields.address_line1),
    address_line2: Type.Optional(fields.address_line2),
    city: Type.Optional(fields.city),
    region: Type.Optional(fields.region),
    postal_code: Type.Optional(fields.postal_code),
    country: Type.Optional(fields.country),
    timezone: fields.timezone,
    phone: Type.Optional(fields.phone),
  },
  { additionalProperties: false },
);

export const UpdateLocationBody = Type.Object(
  {
    name: Type.Optional(fields.name),
    address_line1: Type.Optional(fields.address_line1),
    address_line2: Type.Optional(fields.address_line2),
    city: Type.Optional(fields.city),
    region: Type.Optional(fields.region),
    postal_code: Type.Optional(fields.postal_code),
    country: Type.Optional(fields.country),
    timezone: Type.Optional(fields.timezone),
    phone: Type.Optional(fields.phone),
  },
  { additionalProperties: false, description: 'Only the fields to change; null (or an empty string) clears an optional field.' },
);

export const LocationListQuery = ListQueryWith({
  sort: SortParam(LOCATION_SORT),
  q: Type.Optional(Type.String({ maxLength: 200, description: 'Case-insensitive substring of the name or the city.' })),
  ...DateRangeQuery('created_at'),
});

export const LocationParams = Type.Object({ id: Uuid, locationId: Uuid });
