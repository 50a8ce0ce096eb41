import { DateRangeQuery, ListQueryWith, SortParam, Timestamp, Uuid, nullable } from '@clinic/http-kit';
import { Type } from 'typebox';

export const SUBSCRIPTION_SORT = { created_at: 'created_at', url: 'url', status: 'status' } as const;
export const ATTEMPT_SORT = { created_at: 'a.created_at', attempt: 'a.attempt', status_code: 'a.status_code' } as const;

const EventTypes = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
  minItems: 1,
  maxItems: 100,
  description: 'Event types of the catalog (GET /v1/webhook-event-types, docs/events.md), or ["*"] for every type.',
});

export const Subscription = Type.Object({
  id: Uuid,
  organization_id: Uuid,
  url: Type.String(),
  description: nullable(Type.String()),
  event_types: Type.Array(Type.String()),
  status: Type.Union([Type.Literal('active'), Type.Literal('disabled')]),
  disabled_reason: nullable(
    Type.String({ description: '`manual`, `gone` (the endpoint answered 410) or `failing` (failed for too long).' }),
  ),
  disabled_at: nullable(Timestamp),
  previous_secret_expires_at: nullable(Timestamp),
  failing_since: nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const SubscriptionWithSecret = Type.Object({
  ...Subscription.properties,
  signing_secret: Type.String({
    description: 'Shown only in this response. `whsec_` + base64: HMAC key of both signature headers (docs/events.md).',
  }),
});

export const CreateSubscriptionBody = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 2048, description: 'HTTPS only; must resolve to a public address.' }),
    event_types: EventTypes,
    description: Type.Optional(nullable(Type.String({ maxLength: 500 }))),
  },
  { additionalProperties: false },
);

export const UpdateSubscriptionBody = Type.Object(
  {
    url: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
    event_types: Type.Optional(EventTypes),
    description: Type.Optional(nullable(Type.String({ maxLength: 500 }))),
    status: Type.Optional(
      Type.Union([Type.Literal('active'), Type.Literal('disabled')], { description: '`active` re-enables a disabled subscription.' }),
    ),
  },
  { additionalProperties: false },
);

export const RotateSecretBody = Type.Object(
  {
    overlap_seconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 604_800,
        description: 'How long deliveries also carry the old signature; default 86400 (24 h), 0 ends the old secret now.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const SubscriptionParams = Type.Object({ uid: Uuid });
export const DeliveryParams = Type.Object({ uid: Uuid, deliveryId: Uuid });

export const SubscriptionListQuery = ListQueryWith({
  sort: SortParam(SUBSCRIPTION_SORT),
  status: Type.Optional(Type.String({ description: '`active` or `disabled`.' })),
  ...DateRangeQuery('created_at'),
});

export const AttemptListQuery = ListQueryWith({
  sort: SortParam(ATTEMPT_SORT),
  delivery_status: Type.Optional(Type.String({ description: '`pending`, `delivered` or `failed`.' })),
  event_type: Type.Optional(Type.String()),
  delivery_id: Type.Optional(Type.String({ description: 'One delivery: all its attempts.' })),
  ...DateRangeQuery('created_at'),
});

export const Attempt = Type.Object({
  id: Uuid,
  delivery_id: Uuid,
  event_id: Uuid,
  event_type: Type.String(),
  delivery_status: Type.String({
    description:
      'State of the delivery now: `pending` (a retry is scheduled), `delivered` or `failed` (attempts used up, 410, or disabled).',
  }),
  attempt: Type.Integer({ description: '1 for the first attempt.' }),
  trigger: Type.String({ description: '`event`, `test` or `resend`.' }),
  status_code: nullable(Type.Integer()),
  latency_ms: Type.Integer(),
  error: nullable(Type.String()),
  response_body: nullable(Type.String({ description: 'The first 1024 bytes of the response.' })),
  next_attempt_at: nullable(Timestamp),
  created_at: Timestamp,
});

export const TestResult = Type.Object({
  delivery_id: Uuid,
  event_id: Uuid,
  success: Type.Boolean(),
  status_code: nullable(Type.Integer()),
  latency_ms: Type.Integer(),
  error: nullable(Type.String()),
  response_body: nullable(Type.String()),
});

export const ResendResult = Type.Object({
  delivery_id: Uuid,
  status: Type.Literal('pending'),
  attempt: Type.Integer({ description: 'The number the re-sent attempt will have.' }),
});

export const EventTypeInfo = Type.Object({
  type: Type.String(),
  description: Type.String(),
  emitted_by: Type.String(),
  data: Type.Record(Type.String(), Type.String()),
});
