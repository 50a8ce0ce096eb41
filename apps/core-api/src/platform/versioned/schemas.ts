import { ListQueryWith, PositiveInt32, SortParam, Uuid } from '@clinic/http-kit';
import { Type } from 'typebox';

/** The request schemas of the version routes, the same for every versioned resource. */
export const VERSION_SORT = { version: 'version' } as const;
export const VersionIdParams = Type.Object({ id: Uuid });
export const VersionParams = Type.Object({ id: Uuid, version: Type.String({ maxLength: 10, description: 'A version number.' }) });
export const VersionRollbackBody = Type.Object({ version: PositiveInt32() }, { additionalProperties: false });
export const VersionListQuery = ListQueryWith({ sort: SortParam(VERSION_SORT) });
