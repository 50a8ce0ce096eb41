import { HeadBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { GetAccountCommand, GetEmailIdentityCommand, SESv2Client } from '@aws-sdk/client-sesv2';
import { request } from 'undici';
import { guardedAgents } from '../../platform/outgoing-url.ts';
import type { Credentials } from './credentials.ts';
import type { Capability } from './schemas.ts';

export interface PingTarget {
  capability: Capability;
  credentials: Credentials;
  config: Record<string, unknown>;
}

const str = (v: unknown) => (typeof v === 'string' ? v : '');

type Agents = ReturnType<typeof guardedAgents>;

/**
 * The AWS SDK reaches a local wire-format server through the row's endpoint_url; no retries in a
 * health check. Its sockets resolve names through the outgoing-URL guard.
 */
function awsOptions(t: PingTarget, timeoutMs: number, agents: Agents) {
  const endpoint = str(t.config.endpoint_url);
  return {
    region: str(t.config.region),
    credentials: { accessKeyId: t.credentials.access_key_id!, secretAccessKey: t.credentials.secret_access_key! },
    ...(endpoint ? { endpoint } : {}),
    maxAttempts: 1,
    requestHandler: { requestTimeout: timeoutMs, connectionTimeout: timeoutMs, httpAgent: agents.http, httpsAgent: agents.https },
  };
}

/**
 * One ping through the provider's real client: SES v2 (the account answers, and from_address is a
 * sender identity verified for sending), S3 (the bucket answers HEAD), the Clerk-style identity API
 * (the secret key lists users). Resolves when healthy; rejects with the reason otherwise.
 */
export async function pingProvider(t: PingTarget, timeoutMs: number, allowPrivate: boolean): Promise<void> {
  const agents = guardedAgents(allowPrivate);
  try {
    await ping(t, timeoutMs, agents);
  } finally {
    agents.http.destroy();
    agents.https.destroy();
    await agents.undici.close();
  }
}

async function ping(t: PingTarget, timeoutMs: number, agents: Agents): Promise<void> {
  if (t.capability === 'email') {
    const ses = new SESv2Client(awsOptions(t, timeoutMs, agents));
    try {
      await ses.send(new GetAccountCommand({}));
      const identity = await ses.send(new GetEmailIdentityCommand({ EmailIdentity: str(t.config.from_address) }));
      if (!identity.VerifiedForSendingStatus) throw new Error(`from_address ${str(t.config.from_address)} is not verified for sending`);
    } finally {
      ses.destroy();
    }
    return;
  }
  if (t.capability === 'storage') {
    const s3 = new S3Client({ ...awsOptions(t, timeoutMs, agents), forcePathStyle: t.config.use_path_style === true });
    try {
      await s3.send(new HeadBucketCommand({ Bucket: str(t.config.bucket) }));
    } finally {
      s3.destroy();
    }
    return;
  }
  if (t.capability === 'sms') {
    // The account answers with these credentials (Twilio: GET /2010-04-01/Accounts/{sid}.json).
    const base = str(t.config.endpoint_url) || 'https://api.twilio.com';
    const sid = t.credentials.account_sid!;
    const res = await request(new URL(`/2010-04-01/Accounts/${encodeURIComponent(sid)}.json`, base), {
      headers: { authorization: `Basic ${Buffer.from(`${sid}:${t.credentials.auth_token}`).toString('base64')}` },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      dispatcher: agents.undici,
    });
    await res.body.dump();
    if (res.statusCode === 401 || res.statusCode === 403) throw new Error(`SMS provider rejected the credentials (HTTP ${res.statusCode})`);
    if (res.statusCode !== 200) throw new Error(`SMS provider answered HTTP ${res.statusCode}`);
    return;
  }
  const base = str(t.config.endpoint_url) || 'https://api.clerk.com';
  const res = await request(new URL('/v1/users?limit=1', base), {
    headers: { authorization: `Bearer ${t.credentials.secret_key}` },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    dispatcher: agents.undici,
  });
  await res.body.dump();
  if (res.statusCode === 401 || res.statusCode === 403)
    throw new Error(`identity provider rejected the secret key (HTTP ${res.statusCode})`);
  if (res.statusCode !== 200) throw new Error(`identity provider answered HTTP ${res.statusCode}`);
}

/** A short, secret-free description of a failed ping. */
export function describeFailure(err: unknown): string {
  const e = err as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  const status = e.$metadata?.httpStatusCode ? ` (HTTP ${e.$metadata.httpStatusCode})` : '';
  return `${e.name && e.name !== 'Error' ? `${e.name}: ` : ''}${e.message ?? String(err)}${status}`;
}
