import { Timestamp, Uuid, nullable } from '@clinic/http-kit';
import { Type, type TSchema } from 'typebox';

export const CAPABILITIES = ['email', 'storage', 'auth', 'sms'] as const;
export type Capability = (typeof CAPABILITIES)[number];

const endpointUrl = Type.String({
  maxLength: 2000,
  description: 'Empty in production (the provider default); a local wire-format server elsewhere.',
});
const region = Type.String({ pattern: '^[a-z]{2}(-[a-z]+)+-\\d+$', description: 'e.g. eu-central-1' });
const awsCredentials = Type.Object(
  {
    access_key_id: Type.String({ pattern: '^[A-Z0-9]{16,128}$' }),
    secret_access_key: Type.String({ minLength: 16, maxLength: 128 }),
  },
  { additionalProperties: false },
);

/** Body shapes of spec 2.11, per capability: checked after the PATCH is merged onto the stored row. */
export const SHAPES: Record<Capability, { provider: string; credentials: TSchema; config: TSchema }> = {
  email: {
    provider: 'ses',
    credentials: awsCredentials,
    config: Type.Object(
      {
        region,
        from_address: Type.String({ pattern: '^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$', maxLength: 320 }),
        configuration_set: Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' }),
        endpoint_url: endpointUrl,
        smtp_endpoint: Type.Optional(
          Type.String({
            maxLength: 2000,
            description:
              "Where messages are sent (modules/messages): empty or absent is SES's SMTP interface of the region (smtps://email-smtp.<region>.amazonaws.com:465); smtp://host:port or smtps://host:port otherwise (a local SMTP server in development).",
          }),
        ),
      },
      { additionalProperties: false },
    ),
  },
  sms: {
    // An HTTP API in the shape of Twilio's Messages resource (modules/messages/sms.ts).
    provider: 'twilio',
    credentials: Type.Object(
      {
        account_sid: Type.String({ pattern: '^AC[0-9a-fA-F]{32}$' }),
        auth_token: Type.String({ pattern: '^[0-9a-fA-F]{32}$' }),
      },
      { additionalProperties: false },
    ),
    config: Type.Object(
      {
        from_number: Type.String({ pattern: '^\\+[1-9][0-9]{6,14}$', description: 'E.164 sender number' }),
        endpoint_url: endpointUrl,
      },
      { additionalProperties: false },
    ),
  },
  storage: {
    provider: 's3',
    credentials: awsCredentials,
    config: Type.Object(
      {
        bucket: Type.String({ pattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$' }),
        region,
        use_path_style: Type.Boolean(),
        endpoint_url: endpointUrl,
      },
      { additionalProperties: false },
    ),
  },
  auth: {
    provider: 'clerk',
    credentials: Type.Object(
      {
        secret_key: Type.String({ pattern: '^sk_(test|live)_[A-Za-z0-9]{8,200}$' }),
        publishable_key: Type.String({ pattern: '^pk_(test|live)_[A-Za-z0-9+/=_-]{8,300}$' }),
        webhook_secret: Type.String({ pattern: '^whsec_[A-Za-z0-9+/=]{8,200}$' }),
      },
      { additionalProperties: false },
    ),
    config: Type.Object({ endpoint_url: endpointUrl }, { additionalProperties: false }),
  },
};

/** Credential fields that identify a key without being secret: shown as their last four characters. */
export const HINTED = new Set(['access_key_id', 'publishable_key', 'account_sid']);

export const Provider = Type.Object(
  {
    id: Uuid,
    capability: Type.String(),
    provider: Type.String(),
    organization_id: nullable(Uuid),
    credentials: nullable(
      Type.Record(Type.String(), Type.String(), {
        description: 'Masked: identifiers show their last 4 characters, secrets only that they are set.',
      }),
    ),
    credentials_key_id: nullable(Type.String({ description: 'Id of the master key that sealed the credentials.' })),
    config: Type.Record(Type.String(), Type.Unknown()),
    status: Type.String({ description: 'active, error or inactive (spec 3.3).' }),
    last_error: nullable(Type.String()),
    last_error_at: nullable(Timestamp),
    last_health_check_at: nullable(Timestamp),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'PlatformServiceProvider' },
);

export const UpdateProviderBody = Type.Object(
  {
    credentials: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { description: 'The whole set (spec 2.11 shapes); replaces the stored one.' }),
    ),
    config: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description: 'Keys to change; merged onto the stored config, then checked as a whole.',
      }),
    ),
    status: Type.Optional(
      Type.Union([Type.Literal('active'), Type.Literal('inactive')], { description: 'inactive removes the row from resolution (3.3).' }),
    ),
  },
  { additionalProperties: false },
);

export const CreateOverrideBody = Type.Object(
  {
    capability: Type.Union(CAPABILITIES.map((c) => Type.Literal(c))),
    organization_id: Uuid,
    credentials: Type.Record(Type.String(), Type.Unknown()),
    config: Type.Record(Type.String(), Type.Unknown()),
  },
  { additionalProperties: false },
);

export const Resolved = Type.Object({
  capability: Type.String(),
  source: Type.Union([Type.Literal('organization'), Type.Literal('platform'), Type.Literal('default')], {
    description: "default: no active row, the deployment's built-in provider applies.",
  }),
  provider_id: nullable(Uuid),
  provider: nullable(Type.String()),
  config: nullable(Type.Record(Type.String(), Type.Unknown())),
  updated_at: nullable(Timestamp),
});
