import { createHmac } from 'node:crypto';
import { isIP } from 'node:net';
import nodemailer, { type Transporter } from 'nodemailer';
import type { Logger } from 'pino';
import { request } from 'undici';
import { AppError } from '@clinic/http-kit';
import { ForbiddenDestinationError, guardedAgents, hostOf, resolveGuarded, urlProblem } from '../../platform/outgoing-url.ts';
import type { ProviderResolver, ResolvedProvider } from '../providers/resolver.ts';
import { outboxName, writeOutboxFile } from './outbox.ts';

/**
 * The channel layer: an email or an SMS handed to whichever provider applies to the organization
 * (modules/providers: its override, else the platform row, else the deployment default, which is the
 * outbox folder). Email goes over SMTP with nodemailer, configured from the email provider row (SES's SMTP
 * interface: the row's access key and the SMTP password derived from its secret key and region); SMS over
 * the HTTP API of the SMS row. A row in error is not replaced by the outbox: the send waits and retries
 * (spec 5: a broken configuration fails loudly). Every outgoing connection goes through the outgoing-URL
 * guard: SMTP hosts are resolved once through it and the connection pinned to the address it allowed.
 */

export interface EmailMessage {
  id: string;
  createdAt: Date;
  orgId: string;
  /** The organization's name: the display name of the sender. */
  fromName: string;
  to: string;
  subject: string;
  text: string;
  html: string | null;
  /** An .ics attachment (appointment messages). */
  ics: string | null;
}

export interface SmsMessage {
  id: string;
  createdAt: Date;
  orgId: string;
  fromName: string;
  to: string;
  text: string;
}

/**
 * What a send gave. `sent`; a permanent failure (`refused`: the server or API refused the recipient;
 * `bounced`: it refused the message; `failed`: anything else that a retry cannot fix); or `retry`: a
 * temporary failure (a 4xx reply, a time-out, a provider in error).
 */
export type Outcome =
  | { status: 'sent'; provider: string; providerMessageId: string | null }
  | { status: 'refused' | 'bounced' | 'failed' | 'retry'; provider: string | null; error: string };

export interface Channels {
  sendEmail(m: EmailMessage): Promise<Outcome>;
  sendSms(m: SmsMessage): Promise<Outcome>;
  close(): Promise<void>;
}

export interface ChannelDeps {
  resolver: Pick<ProviderResolver, 'resolve'>;
  outboxDir: string;
  /** The From address of the outbox (no provider row gives one). */
  defaultFrom: string;
  /** Host of Message-IDs and the SMTP greeting (PUBLIC_URL's). */
  host: string;
  allowPrivate: boolean;
  timeoutMs: number;
  /** SMTP connections per provider row. */
  maxConnections: number;
  logger: Logger;
}

/**
 * SES's SMTP password for a secret access key and region (AWS: "Obtaining Amazon SES SMTP credentials"):
 * HMAC-SHA256 chained over a fixed date, the region, "ses", "aws4_request" and "SendRawEmail", prefixed with
 * version byte 4, in base64.
 */
export function sesSmtpPassword(secretAccessKey: string, region: string): string {
  const sign = (key: Buffer | string, msg: string) => createHmac('sha256', key).update(msg, 'utf8').digest();
  let sig = sign(`AWS4${secretAccessKey}`, '11111111');
  for (const part of [region, 'ses', 'aws4_request', 'SendRawEmail']) sig = sign(sig, part);
  return Buffer.concat([Buffer.from([4]), sig]).toString('base64');
}

const str = (v: unknown) => (typeof v === 'string' ? v : '');

/** Removes the recipient (and anything after "to" that repeats it) from a provider's error text. */
function scrubbed(text: string, to: string): string {
  return (to ? text.split(to).join('<recipient>') : text).replace(/\s+/g, ' ').slice(0, 500);
}

interface SmtpEntry {
  version: string;
  createdAt: number;
  transport: Transporter;
  from: string;
  configurationSet: string;
}

export function createChannels(deps: ChannelDeps): Channels {
  const smtp = new Map<string, SmtpEntry>();
  const outbox = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
  const agents = guardedAgents(deps.allowPrivate);

  async function smtpFor(p: ResolvedProvider): Promise<SmtpEntry> {
    const row = p.row!;
    const version = `${row.id}@${new Date(row.updated_at).toISOString()}`;
    const hit = smtp.get(row.id);
    // A changed row (new credentials, another endpoint) and a pinned address older than 5 minutes both
    // make a new transport; the old one finishes what it holds.
    if (hit && hit.version === version && Date.now() - hit.createdAt < 300_000) return hit;
    if (hit) {
      smtp.delete(row.id);
      hit.transport.close();
    }
    const region = str(row.config.region);
    const endpoint = str(row.config.smtp_endpoint) || `smtps://email-smtp.${region}.amazonaws.com:465`;
    const problem = urlProblem(endpoint, deps.allowPrivate, { schemes: ['smtp:', 'smtps:'] });
    if (problem) throw new Error(`smtp_endpoint ${problem}`);
    const url = new URL(endpoint);
    const secure = url.protocol === 'smtps:';
    const host = hostOf(url);
    const address = await resolveGuarded(host, deps.allowPrivate);
    const transport = nodemailer.createTransport({
      host: address,
      port: url.port ? Number(url.port) : secure ? 465 : 587,
      secure,
      // Plain SMTP must upgrade to TLS, except towards a development server on a private address.
      requireTLS: !secure && !deps.allowPrivate,
      ignoreTLS: !secure && deps.allowPrivate,
      tls: isIP(host) ? {} : { servername: host },
      auth: { user: p.credentials!.access_key_id!, pass: sesSmtpPassword(p.credentials!.secret_access_key!, region) },
      pool: true,
      maxConnections: deps.maxConnections,
      maxMessages: 1000,
      connectionTimeout: deps.timeoutMs,
      greetingTimeout: deps.timeoutMs,
      socketTimeout: deps.timeoutMs,
      name: deps.host,
    });
    const entry = {
      version,
      createdAt: Date.now(),
      transport,
      from: str(row.config.from_address),
      configurationSet: str(row.config.configuration_set),
    };
    smtp.set(row.id, entry);
    return entry;
  }

  function mail(m: EmailMessage, from: string, headers: Record<string, string>) {
    return {
      from: { name: m.fromName, address: from },
      to: m.to,
      subject: m.subject,
      text: m.text,
      ...(m.html ? { html: m.html } : {}),
      messageId: `<${m.id}@${deps.host}>`,
      date: m.createdAt,
      headers: { 'X-Clinic-Message-Id': m.id, ...headers },
      attachments: m.ics
        ? [{ filename: 'appointment.ics', content: m.ics, contentType: 'text/calendar; charset=utf-8; method=PUBLISH' }]
        : [],
    };
  }

  /** The provider of a capability, or a retry outcome that says why there is none to use now. */
  async function providerOf(capability: 'email' | 'sms', orgId: string): Promise<ResolvedProvider | Outcome> {
    try {
      return await deps.resolver.resolve(capability, orgId);
    } catch (err) {
      const message = err instanceof AppError ? err.message : (err as Error).message;
      return { status: 'retry', provider: null, error: `provider unavailable: ${message}`.slice(0, 500) };
    }
  }

  return {
    async sendEmail(m) {
      const p = await providerOf('email', m.orgId);
      if ('status' in p) return p;
      if (p.source === 'default') {
        try {
          const info = await outbox.sendMail(mail(m, deps.defaultFrom, {}));
          await writeOutboxFile(deps.outboxDir, outboxName(m.createdAt, m.id, 'email'), info.message as Buffer);
        } catch (err) {
          return { status: 'retry', provider: 'outbox', error: `the outbox folder: ${(err as Error).message}`.slice(0, 500) };
        }
        return { status: 'sent', provider: 'outbox', providerMessageId: null };
      }
      const provider = p.row!.provider;
      let entry: SmtpEntry;
      try {
        entry = await smtpFor(p);
      } catch (err) {
        const e = err as Error;
        return {
          status: 'retry',
          provider,
          error: (e instanceof ForbiddenDestinationError ? `refused: ${e.message}` : e.message).slice(0, 500),
        };
      }
      try {
        const info = await entry.transport.sendMail(
          mail(m, entry.from, entry.configurationSet ? { 'X-SES-CONFIGURATION-SET': entry.configurationSet } : {}),
        );
        if (info.rejected?.length)
          return { status: 'refused', provider, error: scrubbed(`recipient refused: ${info.response ?? ''}`, m.to) };
        // SES answers "250 Ok <ses message id>"; other servers say what they queued it as.
        const queued = /^250[ -](?:Ok|OK)?\s*(\S+)?/.exec(info.response ?? '');
        return { status: 'sent', provider, providerMessageId: queued?.[1] ?? info.messageId ?? null };
      } catch (err) {
        return smtpFailure(err as SmtpError, provider, m.to);
      }
    },

    async sendSms(m) {
      const p = await providerOf('sms', m.orgId);
      if ('status' in p) return p;
      if (p.source === 'default') {
        const body = `From: ${m.fromName}\r\nTo: ${m.to}\r\nDate: ${m.createdAt.toUTCString()}\r\nX-Clinic-Message-Id: ${m.id}\r\n\r\n${m.text}\r\n`;
        try {
          await writeOutboxFile(deps.outboxDir, outboxName(m.createdAt, m.id, 'sms'), body);
        } catch (err) {
          return { status: 'retry', provider: 'outbox', error: `the outbox folder: ${(err as Error).message}`.slice(0, 500) };
        }
        return { status: 'sent', provider: 'outbox', providerMessageId: null };
      }
      return sendTwilio(p, m, deps, agents.undici);
    },

    async close() {
      for (const e of smtp.values()) e.transport.close();
      smtp.clear();
      await agents.undici.close();
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

interface SmtpError extends Error {
  code?: string;
  responseCode?: number;
  response?: string;
  command?: string;
}

/**
 * nodemailer's failures as outcomes: a 5xx to RCPT TO is a refused recipient, a 5xx to the message (DATA) a
 * bounce; 4xx replies, time-outs, lost connections and authentication problems are retried.
 */
function smtpFailure(e: SmtpError, provider: string, to: string): Outcome {
  const detail = scrubbed(`${e.code ?? e.name}${e.responseCode ? ` ${e.responseCode}` : ''}: ${e.response ?? e.message}`, to);
  const permanent = (e.responseCode ?? 0) >= 500;
  if (e.code === 'EENVELOPE' && permanent) return { status: 'refused', provider, error: detail };
  if (e.code === 'EMESSAGE' && permanent) return { status: 'bounced', provider, error: detail };
  return { status: 'retry', provider, error: detail };
}

/** Twilio's error codes that mean this recipient cannot get SMS from us (invalid, not a mobile, opted out). */
const REFUSED_CODES = new Set([21211, 21214, 21408, 21610, 21612, 21614]);

async function sendTwilio(
  p: ResolvedProvider,
  m: SmsMessage,
  deps: ChannelDeps,
  dispatcher: ReturnType<typeof guardedAgents>['undici'],
): Promise<Outcome> {
  const provider = p.row!.provider;
  const base = str(p.row!.config.endpoint_url) || 'https://api.twilio.com';
  const problem = urlProblem(base, deps.allowPrivate, { httpAllowed: deps.allowPrivate });
  if (problem) return { status: 'retry', provider, error: `endpoint_url ${problem}` };
  const sid = p.credentials!.account_sid!;
  try {
    const res = await request(new URL(`/2010-04-01/Accounts/${encodeURIComponent(sid)}/Messages.json`, base), {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${sid}:${p.credentials!.auth_token}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ To: m.to, From: str(p.row!.config.from_number), Body: m.text }).toString(),
      dispatcher,
      headersTimeout: deps.timeoutMs,
      bodyTimeout: deps.timeoutMs,
    });
    const text = await res.body.text();
    let json: { sid?: string; code?: number; message?: string } = {};
    try {
      json = JSON.parse(text);
    } catch {}
    if (res.statusCode >= 200 && res.statusCode < 300) return { status: 'sent', provider, providerMessageId: json.sid ?? null };
    const error = scrubbed(`HTTP ${res.statusCode}${json.code ? ` code ${json.code}` : ''}: ${json.message ?? text.slice(0, 200)}`, m.to);
    if (json.code && REFUSED_CODES.has(json.code)) return { status: 'refused', provider, error };
    if (res.statusCode === 400 || res.statusCode === 404 || res.statusCode === 422) return { status: 'failed', provider, error };
    return { status: 'retry', provider, error };
  } catch (err) {
    const e = err as Error & { code?: string; cause?: Error };
    const cause = e.cause instanceof ForbiddenDestinationError ? e.cause : e;
    return { status: 'retry', provider, error: scrubbed(`${e.code ?? e.name}: ${cause.message}`, m.to) };
  }
}

/** E.164 from what people type (spaces, dashes, dots, parentheses); null when it is not a number we can text. */
export function normalizePhone(raw: string | null | undefined): string | null {
  if (!raw) return null;
  const s = raw.replace(/[\s().-]/g, '').replace(/^00/, '+');
  return /^\+[1-9][0-9]{6,14}$/.test(s) ? s : null;
}
