import { EVENT_CATALOG, INTERNAL_TYPES } from './catalog.ts';

/**
 * docs/events.md, generated from the catalog by `npm run docs:events` (events-doc.test.ts fails when the
 * file and the catalog disagree). The prose before the table is the delivery contract.
 */
export function eventsMarkdown(): string {
  const rows = EVENT_CATALOG.map(
    (e) =>
      `| \`${e.type}\` | ${e.description} | ${e.emittedBy} | ${['organization_id', ...Object.keys(e.data)].map((k) => `\`${k}\``).join(', ')} |`,
  );
  return `# Domain events and webhook deliveries

<!-- Generated from apps/core-api/src/modules/events/catalog.ts by \`npm run docs:events\`. Do not edit by hand. -->

A domain event is written in the same database transaction as the change that causes it (a transactional
outbox, migration 0012), so an event exists if and only if its change committed. The worker (\`npm run worker\`;
inside \`npm start\` on the embedded default) hands each event to the organization's webhook subscriptions that
chose its type (or \`*\`), and to internal consumers.

## Delivery

Each delivery is an HTTPS \`POST\` of the exact bytes that were signed:

\`\`\`json
{ "id": "<event id, UUIDv7>", "event": "<event type>", "data": { "organization_id": "<uuid>", "...": "..." } }
\`\`\`

| Header | Value |
|---|---|
| \`Content-Type\` | \`application/json\` |
| \`X-Webhook-Event\` | the event type |
| \`X-Webhook-Signature\` | \`sha256=\` + lowercase hex HMAC-SHA256 of the raw body, keyed with the whole signing secret string (spec 6.1) |
| \`X-Webhook-Signature-Previous\` | only during a secret rotation overlap: the same with the previous secret |
| \`webhook-id\` | [Standard Webhooks](https://www.standardwebhooks.com/): the event id, the same on every retry |
| \`webhook-timestamp\` | Standard Webhooks: Unix seconds of this attempt (check it against a replay window, 5 minutes by default in the libraries) |
| \`webhook-signature\` | Standard Webhooks: \`v1,\` + base64 HMAC-SHA256 of \`{id}.{timestamp}.{body}\`, keyed with the base64 part of the secret; during an overlap two signatures separated by a space |

The signing secret (\`whsec_\` + base64 of 32 random bytes) is shown once, when the subscription is created or its
secret rotated; it is stored sealed with AES-256-GCM under \`MASTER_KEYS\`. Verify either way:

- \`sha256=\` header: \`verify(secret, rawBody, header)\` from \`@octokit/webhooks-methods\`, or any constant-time
  comparison of \`HMAC-SHA256(secret, rawBody)\` in hex.
- Standard Webhooks: \`new Webhook(secret).verify(rawBody, headers)\` from \`standardwebhooks\` (or the libraries of
  other languages); it also rejects stale timestamps.

Receivers should answer 2xx within 10 seconds and do the work asynchronously, reject a missing or wrong signature,
and de-duplicate on \`id\`: delivery is at least once (a worker that dies with a request on the wire sends it again).

Event ids are UUIDv7 and sort in the order the events were emitted: within one transaction strictly (for example
\`appointment.created\` before the \`appointment.first_booked\` of the same booking), across transactions by time.
Deliveries of one batch are sent concurrently and retries come later, so a receiver that needs the order sorts by \`id\`.

## Retries, limits and disabling

- Time-out: 10 seconds for the whole exchange (\`WEBHOOK_TIMEOUT_MS\`). Redirects are never followed: a 3xx is a failure.
- Attempt 1 is immediate; failures are retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h (the Svix schedule;
  \`WEBHOOK_RETRY_SCHEDULE\`), each delay with ±10% jitter. After the last attempt the delivery is \`failed\`; an
  administrator can re-send it (\`POST /v1/webhook-subscriptions/{uid}/deliveries/{id}/resend\`).
- At most 50 deliveries per 5 seconds per subscription (spec 8; \`WEBHOOK_RATE_LIMIT\`, \`WEBHOOK_RATE_WINDOW_SECONDS\`);
  deliveries over the limit wait for the next window and do not count as attempts.
- Fair scheduling: a failing endpoint (one whose last attempt failed) does not hold up healthy ones. Its deliveries
  and retries queue behind every healthy delivery, and a worker batch sends at most one of them at a time (the rest
  wait a moment, not counted as attempts), so a dead endpoint's backlog costs other subscriptions nothing.
- A \`410 Gone\` answer disables the subscription at once. An endpoint that keeps failing, without one success, for
  5 days (\`WEBHOOK_DISABLE_AFTER_SECONDS\`) is disabled too. Both write an audit entry and emit
  \`webhook_subscription.disabled\`; \`PATCH\` with \`status: "active"\` re-enables.
- Destinations must be HTTPS and resolve to public addresses: loopback, private, link-local (cloud metadata),
  carrier-grade NAT, multicast, reserved and unique-local addresses are refused when the subscription is saved and
  again when each connection is made (\`WEBHOOK_ALLOW_PRIVATE_NETWORKS=true\` lifts this outside production only).
- Secret rotation (\`POST .../rotate-secret\`, \`overlap_seconds\` default 24 h): until the overlap ends, deliveries
  carry signatures by both secrets, so receivers switch at their own pace.
- The delivery log (\`GET /v1/webhook-subscriptions/{uid}/events\`) has one row per attempt: attempt number, trigger
  (\`event\`, \`test\`, \`resend\`), status code, latency, error, the first 1,024 bytes of the response, next attempt time.

## Payloads

Payloads carry ids and states, never personal data such as names or emails: receivers fetch details through the
API with their own credentials, so an erased person's data does not linger in receivers' logs. Every payload has
\`organization_id\`.

## Catalog

| Event | Meaning | Emitted by | \`data\` fields |
|---|---|---|---|
${rows.join('\n')}

Internal events (consumed inside the platform, never delivered to webhooks, not even to \`*\`):
${[...INTERNAL_TYPES].map((t) => `\`${t}\``).join(', ')}.
`;
}
