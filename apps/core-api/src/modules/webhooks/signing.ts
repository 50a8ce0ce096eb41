import { createHmac, randomBytes } from 'node:crypto';

/** A new signing secret in the Standard Webhooks format: `whsec_` + base64 of 32 random bytes. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** `sha256=<lowercase hex HMAC-SHA256 of the exact body>`, keyed with the whole secret string (spec 6.1). */
export function hexSignature(secret: string, body: Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** Standard Webhooks `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, keyed with the base64 part of the secret. */
export function standardSignature(secret: string, id: string, timestamp: number, body: Buffer): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const mac = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64');
  return `v1,${mac}`;
}

export interface SignedDelivery {
  body: Buffer;
  headers: Record<string, string>;
}

/**
 * The bytes and headers of one delivery (spec 6.1 plus Standard Webhooks). The body is serialised once
 * and these exact bytes are both signed and sent. During a rotation's overlap window `secrets` holds the
 * new secret first and the previous one second: `X-Webhook-Signature` is signed with the new secret,
 * `X-Webhook-Signature-Previous` with the old, and `webhook-signature` lists both (the standard's own way
 * to carry several signatures).
 */
export function signDelivery(
  event: { id: string; type: string; data: Record<string, unknown> },
  secrets: readonly string[],
  nowSeconds = Math.floor(Date.now() / 1000),
): SignedDelivery {
  const [current, previous] = secrets;
  if (!current) throw new Error('no signing secret');
  const body = Buffer.from(JSON.stringify({ id: event.id, event: event.type, data: event.data }));
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'clinic-platform-webhooks/1',
    'x-webhook-event': event.type,
    'x-webhook-signature': hexSignature(current, body),
    'webhook-id': event.id,
    'webhook-timestamp': String(nowSeconds),
    'webhook-signature': secrets.map((s) => standardSignature(s, event.id, nowSeconds, body)).join(' '),
  };
  if (previous) headers['x-webhook-signature-previous'] = hexSignature(previous, body);
  return { body, headers };
}
