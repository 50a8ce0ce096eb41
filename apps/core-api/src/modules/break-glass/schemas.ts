import { Timestamp, Uuid } from '@clinic/http-kit';
import { Type } from 'typebox';

export const SCOPES = ['patient_list', 'patient_detail', 'audit_full', 'cross_org_lookup', 'org_management'] as const;
export type BreakGlassScope = (typeof SCOPES)[number];
export const REASON_CATEGORIES = [
  'support_ticket',
  'security_incident',
  'dsar_routing',
  'fraud_investigation',
  'platform_engineering',
] as const;

/** Spec 8: default 1 hour, maximum 4 hours. */
export const DEFAULT_MINUTES = 60;
export const MAX_MINUTES = 240;

const union = (values: readonly string[]) => Type.Union(values.map((v) => Type.Literal(v)));

export const OpenSessionBody = Type.Object(
  {
    organization_id: Uuid,
    scope: union(SCOPES),
    reason_category: union(REASON_CATEGORIES),
    reason_text: Type.String({
      minLength: 10,
      maxLength: 2000,
      description: 'Why the access is needed, in words an auditor at the clinic can follow.',
    }),
    reason_ref: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Ticket or incident reference.' })),
    expires_in_minutes: Type.Optional(
      Type.Integer({ minimum: 1, maximum: MAX_MINUTES, default: DEFAULT_MINUTES, description: 'Default 60, at most 240.' }),
    ),
  },
  { additionalProperties: false },
);

export const BreakGlassSession = Type.Object(
  {
    id: Uuid,
    organization_id: Uuid,
    superadmin_user_id: Uuid,
    scope: Type.String(),
    reason_category: Type.String(),
    reason_text: Type.String(),
    reason_ref: Type.Union([Type.String(), Type.Null()]),
    created_at: Timestamp,
    expires_at: Timestamp,
    ended_at: Type.Union([Timestamp, Type.Null()], { description: 'When the superadmin ended it before its expiry; null otherwise.' }),
    status: Type.Union([Type.Literal('open'), Type.Literal('expired')], { description: 'expired once ended or past expires_at.' }),
  },
  { $id: 'BreakGlassSession' },
);
