import { DataOf, Uuid } from '@clinic/http-kit';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { requirePermission } from '../../platform/gates.ts';
import type { Runtime } from '../../platform/runtime.ts';
import { createTxtLookup } from './dns.ts';
import { AddDomainBody, Domain, DomainParams, VerifyResult } from './schemas.ts';
import { addDomain, deleteDomain, listDomains, verifyDomain, type DomainDeps } from './service.ts';
import { actorOf, errorSchemas, routesOf } from '../../platform/route.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 409, 429);
const tags = ['domains'];
const gate = requirePermission('organizations.manage_domains');

/** Custom domains (spec 2.6, 4.2): list, add, delete, verify by DNS TXT record. */
export function domainRoutes(app: FastifyInstance, rt: Runtime): void {
  const r = routesOf(app, { tags, errors: errorResponses });
  const deps: DomainDeps = {
    prefix: rt.config.domainVerificationPrefix,
    lookupTxt: createTxtLookup({ servers: rt.config.dnsServers }),
  };

  r.get(
    '/v1/organizations/:id/domains',
    {
      config: { orgParam: 'id' },
      onRequest: [gate],
      schema: {
        operationId: 'listDomains',
        summary: 'List the custom domains of an organization',
        description: 'Needs organizations.manage_domains. Newest first; an organization has few domains, so there is no pagination.',
        params: Type.Object({ id: Uuid }),
        response: { 200: Type.Object({ data: Type.Array(Domain) }) },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => listDomains(tx, deps, request.params.id)) }),
  );

  r.post(
    '/v1/organizations/:id/domains',
    {
      config: { orgParam: 'id', idempotent: true },
      onRequest: [gate],
      schema: {
        operationId: 'addDomain',
        summary: 'Add a custom domain; returns the DNS TXT record to publish',
        description:
          'Needs organizations.manage_domains. A domain belongs to one organization at most: 409 domain_taken when any organization has it. ' +
          'Publish `verification.value` as a TXT record at `verification.name`, then call verifyDomain. Honours Idempotency-Key.',
        params: Type.Object({ id: Uuid }),
        body: AddDomainBody,
        response: { 201: DataOf(Domain) },
      },
    },
    async (request, reply) => {
      const actor = actorOf(request);
      const domain = await request.inTx((tx) => addDomain(tx, deps, actor, request.params.id, request.body.domain));
      return reply.status(201).send({ data: domain });
    },
  );

  r.delete(
    '/v1/organizations/:id/domains/:domainId',
    {
      config: { orgParam: 'id' },
      onRequest: [gate],
      schema: {
        operationId: 'deleteDomain',
        summary: 'Remove a custom domain; it stops resolving at once',
        params: DomainParams,
        response: { 204: Type.Null({ description: 'Removed' }) },
      },
    },
    async (request, reply) => {
      const actor = actorOf(request);
      await request.inTx((tx) => deleteDomain(tx, actor, request.params.id, request.params.domainId));
      return reply.status(204).send(null);
    },
  );

  r.post(
    '/v1/organizations/:id/domains/:domainId/verify',
    {
      config: { orgParam: 'id', idempotent: true },
      onRequest: [gate],
      schema: {
        operationId: 'verifyDomain',
        summary: 'Check the DNS TXT record of a custom domain',
        description:
          'Looks up TXT records at `verification.name`. Found with the expected value: the domain is verified and resolves publicly. ' +
          'Otherwise 200 with `verified: false` and a `reason` naming the record to publish (the check ran; its answer is no). ' +
          'An already verified domain is returned as it is.',
        params: DomainParams,
        response: { 200: DataOf(VerifyResult) },
      },
    },
    async (request) => ({
      data: await verifyDomain((fn) => request.inTx(fn), deps, actorOf(request), request.params.id, request.params.domainId),
    }),
  );
}
