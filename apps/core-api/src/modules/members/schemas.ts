import { DateRangeQuery, ListQueryWith, SortParam, Timestamp, Uuid } from '@clinic/http-kit';
import { Type } from 'typebox';
import { MEMBER_SORT } from './service.ts';

export const Member = Type.Object(
  {
    user_id: Uuid,
    email: Type.String(),
    kind: Type.String({ description: 'human, agent or service_account' }),
    confirmed: Type.Boolean({ description: 'false for a member added by email who has not signed in yet' }),
    role_id: Uuid,
    role_code: Type.String({ description: 'Display label only: never branch authorization on it.' }),
    created_at: Timestamp,
  },
  {
    $id: 'Member',
    description: 'A membership of the organization: one role per user (spec 2.4). created_at is when the user became a member.',
  },
);

export const MemberListQuery = ListQueryWith({
  sort: SortParam(MEMBER_SORT),
  role_code: Type.Optional(Type.String({ description: 'Only members with this role code.' })),
  kind: Type.Optional(Type.String({ description: 'Only principals of this kind: human, agent or service_account.' })),
  q: Type.Optional(Type.String({ description: 'Substring of the email, case-insensitive.' })),
  ...DateRangeQuery('created_at'),
});

export const AddMemberBody = Type.Object(
  {
    email: Type.String({ format: 'email', maxLength: 254, description: 'Matched case-insensitively; stored lower-cased for a new user.' }),
    role_code: Type.String({ minLength: 1, maxLength: 63, description: 'Code of a role of this organization (GET .../roles).' }),
  },
  { additionalProperties: false },
);

export const MemberParams = Type.Object({ id: Uuid, userId: Uuid });
