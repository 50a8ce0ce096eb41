import { ListQueryWith, SortParam, Timestamp, Uuid } from '@clinic/http-kit';
import { Type } from 'typebox';
import { ROLE_SORT } from './service.ts';

const CODE_PATTERN = '^[a-z][a-z0-9_]{0,62}$';

export const Role = Type.Object(
  {
    id: Uuid,
    code: Type.String({ description: 'Unique in the organization; a display label, never an authorization input.' }),
    name: Type.String(),
    is_system: Type.Boolean({ description: 'A clone of a system template: its code cannot change and it cannot be deleted.' }),
    permissions: Type.Array(Type.String(), { description: 'Permission codes, sorted.' }),
    created_at: Timestamp,
  },
  { $id: 'Role' },
);

export const RoleListQuery = ListQueryWith({
  sort: SortParam(ROLE_SORT),
  is_system: Type.Optional(Type.String({ description: 'true: only system roles; false: only custom roles.' })),
  code: Type.Optional(Type.String({ description: 'Only the role with this code.' })),
});

const Permissions = Type.Array(Type.String({ maxLength: 100 }), {
  maxItems: 500,
  description: 'Permission codes from the catalog (spec 2.7); the full set, duplicates ignored.',
});

export const CreateRoleBody = Type.Object(
  {
    code: Type.String({ pattern: CODE_PATTERN, description: 'Lowercase letter, then up to 62 lowercase letters, digits or underscores.' }),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    permissions: Permissions,
  },
  { additionalProperties: false },
);

export const UpdateRoleBody = Type.Object(
  {
    code: Type.Optional(
      Type.String({
        pattern: CODE_PATTERN,
        description: 'Custom roles only: changing the code of a system role is 409 system_role_immutable.',
      }),
    ),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    permissions: Type.Optional(Permissions),
  },
  { additionalProperties: false },
);

export const RoleParams = Type.Object({ id: Uuid, roleId: Uuid });
