import { DateRangeQuery, ListQueryWith, SortParam, Timestamp, Uuid, nullable } from '@clinic/http-kit';
import { Type } from 'typebox';

/** Public sort fields -> SQL (spec 4.1): newest first by default. */
export const AUDIT_SORT = { created_at: 'created_at', action: 'action' } as const;

export const AuditLog = Type.Object(
  {
    id: Uuid,
    organization_id: nullable(Uuid),
    actor_user_id: nullable(Uuid),
    action: Type.String(),
    entity_type: Type.String(),
    entity_id: nullable(Uuid),
    action_context: nullable(Type.String({ description: 'For example break_glass (then break_glass_id is set) or template_propagate.' })),
    break_glass_id: nullable(Uuid),
    data: Type.Record(Type.String(), Type.Unknown()),
    ip: nullable(Type.String()),
    created_at: Timestamp,
    chain_seq: Type.Integer({ description: "Position in the organization's hash chain (platform entries have their own chain)." }),
    row_hash: Type.String({ description: 'SHA-256 (hex) over the previous entry hash and this entry; see docs/operations.md.' }),
  },
  { $id: 'AuditLog' },
);

/** Flat filters (spec 4.1): who, what, on which entity, when. */
export const AuditFilterQuery = {
  actor_user_id: Type.Optional(Type.String({ description: 'Only entries by this user (uuid).' })),
  action: Type.Optional(Type.String({ description: 'Exact action, e.g. location.created.' })),
  entity_type: Type.Optional(Type.String({ description: 'Exact entity type, e.g. location.' })),
  entity_id: Type.Optional(Type.String({ description: 'Only entries about this entity (uuid).' })),
  action_context: Type.Optional(Type.String({ description: 'For example break_glass: what superadmins did under an elevation.' })),
  break_glass_id: Type.Optional(Type.String({ description: 'Only entries written under this break-glass session (uuid).' })),
  ...DateRangeQuery('created_at'),
};

export const AuditListQuery = ListQueryWith({ sort: SortParam(AUDIT_SORT), ...AuditFilterQuery });
export const AuditExportQuery = Type.Object(AuditFilterQuery);

export const ACCESS_SORT = { occurred_at: 'occurred_at', action: 'action' } as const;
export const MY_ACCESS_SORT = { occurred_at: 'occurred_at' } as const;

/** One read of patient data (migration 0064). */
export const AccessEntry = Type.Object(
  {
    id: Uuid,
    organization_id: Uuid,
    occurred_at: Timestamp,
    actor_user_id: nullable(Uuid),
    patient_ids: Type.Array(Uuid, { description: 'Whose data: one patient record, or the patients of a listed page.' }),
    action: Type.String({
      description:
        'patient.read, patient.listed, patient_profile.read, form.read, form.listed, form_file.read, form_file.listed, consents.read, impersonation.request',
    }),
    target_id: nullable(Uuid),
    action_context: nullable(Type.String({ description: 'impersonation, break_glass or caregiver.' })),
    context_id: nullable(Uuid),
    method: nullable(Type.String()),
    route: nullable(Type.String({ description: 'The route pattern of the request (impersonation.request names what was done).' })),
    request_id: Type.Optional(nullable(Type.String())),
    ip: Type.Optional(nullable(Type.String())),
  },
  { $id: 'AccessEntry' },
);

export const AccessListQuery = ListQueryWith({
  sort: SortParam(ACCESS_SORT),
  patient_id: Type.Optional(Type.String({ description: 'Reads that touched this patient record (uuid).' })),
  actor_user_id: Type.Optional(Type.String({ description: 'Reads by this user (uuid).' })),
  action: Type.Optional(Type.String()),
  action_context: Type.Optional(Type.String({ description: 'impersonation, break_glass or caregiver.' })),
  ...DateRangeQuery('occurred_at'),
});
export const MyAccessListQuery = ListQueryWith({ sort: SortParam(MY_ACCESS_SORT) });
