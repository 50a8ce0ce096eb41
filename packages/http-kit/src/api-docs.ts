import swagger, { type FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

export interface ApiDocsOptions {
  title: string;
  version: string;
  description: string;
  /** The public base URL of the service (the `servers` entry). */
  serverUrl?: string;
  securitySchemes?: Record<string, Record<string, unknown>>;
  /** Extra top-level members of the description (the core API's `webhooks`). */
  extra?: Record<string, unknown>;
}

/**
 * Every service describes itself the same way: its OpenAPI 3.1 description at `GET /openapi.json`
 * and a browsable page at `/docs`, both public. Register before the routes: the description is
 * collected from the routes declared after it.
 */
export async function installApiDocs(app: FastifyInstance, opts: ApiDocsOptions): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: opts.title, version: opts.version, description: opts.description },
      ...(opts.serverUrl ? { servers: [{ url: opts.serverUrl }] } : {}),
      ...(opts.securitySchemes ? { components: { securitySchemes: opts.securitySchemes } } : {}),
      ...opts.extra,
      // The schemes and extra members are plain OpenAPI objects; the library's types are stricter than useful here.
    } as FastifyDynamicSwaggerOptions['openapi'],
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true }, config: { public: true } }, async () => app.swagger());
}

/**
 * `GET /health` of a companion service, in the core API's shape (status, checks, uptime_seconds):
 * the process answering is the whole check, so `checks` is empty.
 */
export function installHealthRoute(app: FastifyInstance): void {
  app.get(
    '/health',
    {
      config: { public: true },
      schema: {
        operationId: 'getHealth',
        summary: 'Liveness: the service answers',
        response: {
          200: {
            type: 'object',
            properties: {
              status: { type: 'string', enum: ['healthy'] },
              checks: { type: 'object' },
              uptime_seconds: { type: 'integer' },
            },
            required: ['status', 'checks', 'uptime_seconds'],
          },
        },
      },
    },
    async () => ({ status: 'healthy', checks: {}, uptime_seconds: Math.floor(process.uptime()) }),
  );
}
