import { EVENT_CATALOG } from './catalog.ts';

const SIGNATURE_HEADERS = [
  { name: 'X-Webhook-Event', description: 'The event type.' },
  {
    name: 'X-Webhook-Signature',
    description: '`sha256=<lowercase hex HMAC-SHA256 of the raw body>`, keyed with the signing secret (spec 6.1).',
  },
  { name: 'X-Webhook-Signature-Previous', description: 'During a secret rotation overlap only: the same, keyed with the previous secret.' },
  { name: 'webhook-id', description: 'Standard Webhooks: the event id (same on every retry).' },
  { name: 'webhook-timestamp', description: 'Standard Webhooks: Unix seconds of this attempt.' },
  {
    name: 'webhook-signature',
    description: 'Standard Webhooks: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`; two, space-separated, during a rotation overlap.',
  },
];

/**
 * The `webhooks` section of the OpenAPI 3.1 description (docs/events.md says the same in prose): one
 * entry per event type of the catalog, with its body and the signature headers.
 */
// The return type is @fastify/swagger's own (an OpenAPI 3.1 PathItemObject per event type), named loosely
// here so this module does not depend on the plugin's type packages.
// biome-ignore lint/suspicious/noExplicitAny: the plugin's own type, named loosely on purpose (see above).
export function webhooksSection(): Record<string, any> {
  return Object.fromEntries(
    EVENT_CATALOG.map((e) => [
      e.type,
      {
        post: {
          summary: e.description,
          description: `Emitted by: ${e.emittedBy}. Verify a signature over the raw body before parsing it, answer 2xx quickly, and de-duplicate on \`id\`.`,
          tags: ['webhook events'],
          parameters: SIGNATURE_HEADERS.map((h) => ({
            name: h.name,
            in: 'header',
            required: h.name !== 'X-Webhook-Signature-Previous',
            description: h.description,
            schema: { type: 'string' },
          })),
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['id', 'event', 'data'],
                  additionalProperties: false,
                  properties: {
                    id: { type: 'string', format: 'uuid', description: 'The event id: de-duplicate on it.' },
                    event: { type: 'string', const: e.type },
                    data: {
                      type: 'object',
                      required: ['organization_id'],
                      properties: {
                        organization_id: { type: 'string', format: 'uuid' },
                        ...Object.fromEntries(Object.entries(e.data).map(([k, d]) => [k, { description: d }])),
                      },
                    },
                  },
                },
              },
            },
          },
          responses: {
            '2XX': { description: 'Received. Anything else (or no answer within 10 s) is retried; 410 Gone disables the subscription.' },
          },
        },
      },
    ]),
  );
}
