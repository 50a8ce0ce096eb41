import { ListQueryWith, SortParam, Uuid, nullable } from '@clinic/http-kit';
import { Type } from 'typebox';

/** Every public booking route names its organization, or is called on the organization's own domain. */
const organization = {
  organization: Type.Optional(
    Type.String({
      maxLength: 63,
      description: "The organization's id or slug; left out, the request's host must be one of its verified custom domains.",
    }),
  ),
};
export const OrganizationQuery = Type.Object(organization);

export const PublicSpecialist = Type.Object(
  {
    id: Uuid,
    display_name: Type.String(),
    title: nullable(Type.String()),
    bio: nullable(Type.String()),
    languages: Type.Array(Type.String()),
    gender: nullable(Type.String()),
    qualifications: Type.Array(Type.Object({ title: Type.String(), institution: nullable(Type.String()), year: nullable(Type.Integer()) })),
    practising_since: nullable(Type.Integer()),
    booking_note: nullable(Type.String()),
    specialties: Type.Array(Type.Object({ id: Uuid, code: Type.String(), name: Type.String() })),
    location_ids: Type.Array(Uuid, { description: 'GET /v1/public/locations' }),
    service_ids: Type.Array(Uuid, { description: 'Its public services (GET /v1/public/services).' }),
  },
  { $id: 'PublicSpecialist', description: 'What the public booking page may show of a specialist: never contact data.' },
);

export const PublicService = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    description: nullable(Type.String()),
    duration_minutes: Type.Integer(),
    price_minor: Type.Integer({ description: 'In minor units of currency.' }),
    currency: Type.String(),
    mode: Type.String({ description: 'in_person, video or phone.' }),
    min_notice_minutes: Type.Integer(),
    max_days_ahead: Type.Integer(),
    cancellation_window_minutes: Type.Integer(),
    location_ids: Type.Array(Uuid),
    specialist_ids: Type.Array(Uuid, { description: 'The bookable specialists who deliver it.' }),
  },
  { $id: 'PublicService' },
);

export const PublicLocation = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    address_line1: nullable(Type.String()),
    address_line2: nullable(Type.String()),
    city: nullable(Type.String()),
    region: nullable(Type.String()),
    postal_code: nullable(Type.String()),
    country: nullable(Type.String()),
    timezone: Type.String(),
    phone: nullable(Type.String({ description: "The location's front desk." })),
  },
  { $id: 'PublicLocation' },
);

export const PUBLIC_SPECIALIST_SORT = { display_name: 'lower(s.display_name)', created_at: 's.created_at' } as const;
export const PUBLIC_SERVICE_SORT = {
  name: 'lower(v.name)',
  duration_minutes: 'v.duration_minutes',
  price_minor: 'v.price_minor',
  created_at: 'v.created_at',
} as const;
export const PUBLIC_LOCATION_SORT = { name: 'lower(name)', created_at: 'created_at' } as const;

export const PublicSpecialistQuery = ListQueryWith({
  ...organization,
  sort: SortParam(PUBLIC_SPECIALIST_SORT),
  specialty_id: Type.Optional(Uuid),
  location_id: Type.Optional(Uuid),
  service_id: Type.Optional(Uuid),
  language: Type.Optional(Type.String({ maxLength: 35, description: 'A BCP 47 tag the specialist speaks.' })),
});
export const PublicServiceQuery = ListQueryWith({
  ...organization,
  sort: SortParam(PUBLIC_SERVICE_SORT),
  location_id: Type.Optional(Uuid),
  specialist_id: Type.Optional(Uuid),
});
export const PublicLocationQuery = ListQueryWith({ ...organization, sort: SortParam(PUBLIC_LOCATION_SORT) });
export const PublicSpecialistParams = Type.Object({ id: Uuid });
