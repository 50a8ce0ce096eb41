import { Timestamp, Uuid, PositiveInt32, nullable } from '@clinic/http-kit';
import { Type } from 'typebox';
import { SOURCES } from './queries.ts';

const PurposeCode = Type.String({ minLength: 1, maxLength: 100, pattern: '^[a-z][a-z0-9_]*$' });

export const PurposeVersion = Type.Object(
  {
    id: Uuid,
    purpose_code: Type.String(),
    organization_id: nullable(Uuid),
    version: Type.Integer(),
    body_translations: Type.Record(Type.String(), Type.String(), { description: 'Language code -> text; always has en.' }),
    published_at: Timestamp,
    published_by_principal_id: nullable(Uuid, {
      description: 'Who published it; in the catalog, null for callers who do not run this text (a staff id).',
    }),
  },
  { description: 'A published text of a purpose: a platform default (organization_id null) or a clinic override.' },
);

export const ConsentPurpose = Type.Object(
  {
    code: Type.String(),
    scope: Type.Union([Type.Literal('platform'), Type.Literal('org')]),
    name: Type.String(),
    description: Type.String(),
    legal_basis: Type.String(),
    withdrawable: Type.Boolean({ description: 'True iff legal_basis is consent.' }),
    required: Type.Boolean({ description: 'Asked for by the re-consent gate (412) once a version is published.' }),
    organization_id: nullable(Uuid, {
      description:
        "The organization that created the purpose (its own treatment_specific_* purposes), whose alone it is; null: the platform's.",
    }),
    platform_version: nullable(PurposeVersion),
    organization_version: nullable(PurposeVersion),
    latest: nullable(PurposeVersion),
  },
  { $id: 'ConsentPurpose' },
);

export const PublishVersionBody = Type.Object(
  {
    body_translations: Type.Record(Type.String(), Type.String({ maxLength: 200_000 }), {
      description: 'Language code -> text of this version; en is required, ro and others allowed.',
    }),
  },
  { additionalProperties: false },
);

export const PurposeParams = Type.Object({ code: PurposeCode });
export const CreateOrgPurposeBody = Type.Object(
  {
    code: Type.String({
      pattern: '^treatment_specific_[a-z0-9_]+$',
      maxLength: 63,
      description: 'treatment_specific_<name>: unique platform-wide.',
      examples: ['treatment_specific_knee_rehab'],
    }),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    description: Type.String({ minLength: 1, maxLength: 2000 }),
  },
  { additionalProperties: false },
);
export const OrgPurposeParams = Type.Object({ id: Uuid, code: PurposeCode });

export const ConsentRow = Type.Object(
  {
    id: Uuid,
    organization_id: nullable(Uuid),
    patient_profile_id: Uuid,
    purpose_code: Type.String(),
    purpose_version: Type.Integer(),
    source: Type.String(),
    source_form_id: nullable(Uuid),
    granted_at: Timestamp,
    granted_by_principal_id: Uuid,
    granted_via_ip: nullable(Type.String()),
    withdrawn_at: nullable(Timestamp),
    withdrawn_by_principal_id: nullable(Uuid),
    withdrawal_reason: nullable(Type.String()),
    created_at: Timestamp,
  },
  { $id: 'ConsentLedgerRow' },
);

export const ConsentGroup = Type.Object(
  {
    organization_id: nullable(Uuid),
    purpose_code: Type.String(),
    scope: Type.String(),
    legal_basis: Type.String(),
    withdrawable: Type.Boolean(),
    current: nullable(
      Type.Object({
        id: Uuid,
        purpose_version: Type.Integer(),
        granted_at: Timestamp,
        source: Type.String(),
      }),
    ),
    history: Type.Array(ConsentRow, { description: 'Every row of this (organization, purpose), newest first.' }),
  },
  { $id: 'ConsentGroup' },
);

const Source = Type.Union(SOURCES.map((s) => Type.Literal(s)));

export const GrantBody = Type.Object(
  {
    grants: Type.Array(
      Type.Object(
        {
          organization_id: nullable(Uuid),
          purpose_code: PurposeCode,
          purpose_version: PositiveInt32(),
          source: Source,
          source_form_id: Type.Optional(nullable(Uuid)),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 50 },
    ),
  },
  { additionalProperties: false, description: 'All grants are recorded, or none.' },
);

export const StaffGrantBody = Type.Object(
  {
    grants: Type.Array(
      Type.Object(
        {
          organization_id: Type.Optional(Uuid),
          purpose_code: PurposeCode,
          purpose_version: PositiveInt32(),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 50 },
    ),
  },
  { additionalProperties: false, description: 'Organization-scope purposes at the organization of the path; source is staff_action.' },
);

export const WithdrawBody = Type.Object(
  { withdrawal_reason: Type.Optional(nullable(Type.String({ maxLength: 1000 }))) },
  { additionalProperties: false },
);

export const PatientParams = Type.Object({ org_id: Uuid, patient_id: Uuid });
export const PatientConsentParams = Type.Object({ org_id: Uuid, patient_id: Uuid, id: Uuid });

export const OnboardBody = Type.Object(
  { organization_id: Uuid, grants: GrantBody.properties.grants },
  { additionalProperties: false, description: 'The clinic to join and the initial grants (platform and clinic purposes).' },
);

export const OnboardResult = Type.Object({
  patient_id: Uuid,
  organization_id: Uuid,
  patient_status: Type.Union([Type.Literal('created'), Type.Literal('revived'), Type.Literal('existing')]),
  consents: Type.Array(ConsentRow),
});
