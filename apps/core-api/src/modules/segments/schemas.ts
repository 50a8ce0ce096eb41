import { DateRangeQuery, ListQueryWith, SortParam, Timestamp, Uuid, nullable } from '@clinic/http-kit';
import { Type } from 'typebox';

export const SEGMENT_SORT = { created_at: 'created_at', name: 'name', evaluated_at: 'evaluated_at', member_count: 'member_count' } as const;
export const MEMBER_SORT = { patient_id: 'm.patient_id', last_name: 'p.last_name' } as const;

export const IdParams = Type.Object({ id: Uuid });

const Criteria = Type.Record(Type.String(), Type.Unknown(), {
  description:
    "A criteria tree: { and: [...] }, { or: [...] }, { not: {...} } or a condition { field, op, value } with fields and operators from GET /v1/segment-fields (patient fields, custom.<key>, appointments and enrollments with where, consent, tag). Compiled to parameterised SQL; run under the caller's row policies.",
});

export const Evaluation = Type.Object({
  id: Uuid,
  status: Type.String({ description: '`running`, `done` or `failed`.' }),
  total: Type.Integer({ description: 'Patients of the organization when it started.' }),
  processed: Type.Integer({ description: 'How many of them it has looked at (progress).' }),
  member_count: Type.Integer(),
  error: nullable(Type.String()),
  started_at: Timestamp,
  finished_at: nullable(Timestamp),
});

export const Segment = Type.Object({
  id: Uuid,
  organization_id: Uuid,
  name: Type.String(),
  description: nullable(Type.String()),
  criteria: Type.Record(Type.String(), Type.Unknown()),
  evaluated_at: nullable(Timestamp),
  member_count: nullable(Type.Integer({ description: 'Members of the last finished evaluation.' })),
  last_evaluation: nullable(Evaluation),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const CreateSegmentBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    description: Type.Optional(nullable(Type.String({ maxLength: 2000 }))),
    criteria: Criteria,
  },
  { additionalProperties: false },
);

export const UpdateSegmentBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    description: Type.Optional(nullable(Type.String({ maxLength: 2000 }))),
    criteria: Type.Optional(Criteria),
  },
  { additionalProperties: false },
);

export const SegmentListQuery = ListQueryWith({ sort: SortParam(SEGMENT_SORT), ...DateRangeQuery('created_at') });

export const Member = Type.Object({
  segment_id: Uuid,
  patient_id: Uuid,
  first_name: nullable(Type.String({ description: 'null when the caller cannot read the patient record.' })),
  last_name: nullable(Type.String()),
  evaluated_at: nullable(Timestamp),
});

export const MemberListQuery = ListQueryWith({ sort: SortParam(MEMBER_SORT) });

export const Field = Type.Object({
  field: Type.String(),
  type: Type.String(),
  ops: Type.Array(Type.String()),
  value: Type.Optional(Type.String()),
});
