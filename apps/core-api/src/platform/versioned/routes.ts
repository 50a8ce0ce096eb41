import type { Queryable } from '@clinic/db';
import { DataOf, ErrorResponse, type ListEnvelope, ListOf } from '@clinic/http-kit';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import type { Actor } from '../actor.ts';
import type { ModuleRoutes } from '../route.ts';
import { VersionIdParams, VersionListQuery, VersionParams, VersionRollbackBody } from './schemas.ts';

type Gate = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

/** What one of the four version routes says in the OpenAPI description. */
interface RouteText {
  operationId: string;
  summary: string;
  description?: string;
}

/**
 * A versioned resource (draft -> publish -> versions -> rollback, spec 3.1 and 9.6): custom fields and form
 * templates today, PDF templates and treatment plans next. Each resource keeps its own payload, schemas,
 * validation and service; this is the part of their routes that is the same for all of them.
 */
export interface VersionedRoutes<Id extends string = string> {
  /** The collection path, e.g. `/v1/custom-fields`; the routes are `${base}/:id/publish` and so on. */
  base: string;
  /** Gate of publish and rollback. */
  manage: Gate;
  /** Gate of the version reads. */
  read: Gate;
  text: { publish: RouteText; rollback: RouteText; listVersions: RouteText; getVersion: RouteText };
  /** The resource and one version of it, as responses show them. */
  schemas: { resource: TSchema; version: TSchema };
  actorOf: (request: FastifyRequest) => Actor;
  /** The organization whose versions are read. */
  orgOf: (request: FastifyRequest) => string;
  service: {
    publish(tx: Queryable, actor: Actor, id: Id): Promise<unknown>;
    rollback(tx: Queryable, actor: Actor, id: Id, version: number): Promise<unknown>;
    listVersions(tx: Queryable, orgId: string, id: Id, query: Record<string, unknown>): Promise<ListEnvelope<unknown>>;
    getVersion(tx: Queryable, orgId: string, id: Id, version: string): Promise<unknown>;
  };
  /**
   * Called in the transaction of a version read, after it succeeded: a resource that holds patient data
   * records the read there (request.logAccess).
   */
  afterRead?(request: FastifyRequest, tx: Queryable, id: Id): Promise<void>;
}

/** The head of a route's schema, in the order the other routes write it (the description keeps it). */
function head(t: RouteText) {
  return {
    operationId: t.operationId,
    summary: t.summary,
    ...(t.description ? { description: t.description } : {}),
  };
}

/** Registers publish, rollback, the version list and one version for a versioned resource. */
export function versionRoutes(r: ModuleRoutes, v: VersionedRoutes): void {
  const { schemas } = v;
  type IdParams = { id: string };
  type VersionParams = { id: string; version: string };

  r.post(
    `${v.base}/:id/publish`,
    {
      config: { idempotent: true },
      onRequest: [v.manage],
      schema: {
        ...head(v.text.publish),
        params: VersionIdParams,
        response: { 200: DataOf(schemas.resource) },
      },
    },
    async (request) => {
      const actor = v.actorOf(request);
      const { id } = request.params as IdParams;
      return { data: await request.inTx((tx) => v.service.publish(tx, actor, id)) };
    },
  );

  r.post(
    `${v.base}/:id/rollback`,
    {
      config: { idempotent: true },
      onRequest: [v.manage],
      schema: {
        ...head(v.text.rollback),
        params: VersionIdParams,
        body: VersionRollbackBody,
        response: { 200: DataOf(schemas.resource) },
      },
    },
    async (request) => {
      const actor = v.actorOf(request);
      const { id } = request.params as IdParams;
      const { version } = request.body as { version: number };
      return { data: await request.inTx((tx) => v.service.rollback(tx, actor, id, version)) };
    },
  );

  r.get(
    `${v.base}/:id/versions`,
    {
      onRequest: [v.read],
      schema: {
        ...head(v.text.listVersions),
        params: VersionIdParams,
        querystring: VersionListQuery,
        response: { 200: ListOf(schemas.version), 422: ErrorResponse },
      },
    },
    async (request) => {
      const { id } = request.params as IdParams;
      return request.inTx(async (tx) => {
        const list = await v.service.listVersions(tx, v.orgOf(request), id, request.query as Record<string, unknown>);
        await v.afterRead?.(request, tx, id);
        return list;
      });
    },
  );

  r.get(
    `${v.base}/:id/versions/:version`,
    {
      onRequest: [v.read],
      schema: {
        ...head(v.text.getVersion),
        params: VersionParams,
        response: { 200: DataOf(schemas.version) },
      },
    },
    async (request) => {
      const { id, version } = request.params as VersionParams;
      return {
        data: await request.inTx(async (tx) => {
          const row = await v.service.getVersion(tx, v.orgOf(request), id, version);
          await v.afterRead?.(request, tx, id);
          return row;
        }),
      };
    },
  );
}
