import { Type, type TSchema } from 'typebox';

export const Uuid = Type.String({
  format: 'uuid',
  pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$',
});

/** RFC 3339 in UTC on the wire (spec 2.1); a Date in code, serialised with toISOString. */
export const Timestamp = Type.Unsafe<Date>({ type: 'string', format: 'date-time' });

/** The error envelope of spec 2.2. */
export const ErrorResponse = Type.Object(
  {
    error: Type.Object(
      {
        code: Type.String(),
        message: Type.String(),
        fields: Type.Optional(Type.Record(Type.String(), Type.String())),
      },
      { additionalProperties: true },
    ),
  },
  { $id: 'ErrorResponse', description: 'Error envelope (spec 2.2)' },
);

/** `{ data: T }`: the single-resource envelope. */
export const DataOf = <T extends TSchema>(schema: T) => Type.Object({ data: schema });

/**
 * A version number or count in a request: a positive integer that fits PostgreSQL's `integer`. Without the
 * upper bound, 2147483648 or 1e308 (an integer to JSON) passed validation and failed in the database (500).
 */
export const PositiveInt32 = (opts: { description?: string } = {}) => Type.Integer({ minimum: 1, maximum: 2_147_483_647, ...opts });

/** The schema or null (a nullable column); options such as a description go on the union. */
export const nullable = <T extends TSchema>(schema: T, options: { description?: string } = {}) =>
  Type.Union([schema, Type.Null()], options);
