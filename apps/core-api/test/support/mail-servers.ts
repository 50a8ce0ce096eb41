import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

/**
 * A real SMTP server on loopback (smtp-server, plain SMTP with AUTH allowed without TLS) that parses what it
 * receives (mailparser), and a fake of the SMS HTTP API (Twilio's Messages resource). Tests tell them which
 * recipients to refuse and which messages to bounce.
 */
export interface ReceivedMail {
  from: string;
  to: string[];
  auth: { username: string; password: string } | null;
  raw: string;
  mail: ParsedMail;
}

export interface SmtpSink {
  port: number;
  url: string;
  received: ReceivedMail[];
  /** Recipients answered 550 at RCPT TO. */
  refuse: Set<string>;
  /** Recipients answered 451 (try again later) at RCPT TO, once each. */
  deferOnce: Set<string>;
  /** When true, every message is answered 554 after DATA. */
  bounceAll: boolean;
  /** Delay before the server accepts a message (keeps sends on the wire). */
  delayMs: number;
  /**
   * Called with each message once it is in `received`, before the server answers 250 to it (a crash test
   * kills the sender there: the message has arrived, and the sender never heard so).
   */
  onMessage: ((m: ReceivedMail) => void) | null;
  /** Connections that ended in an error (a sender killed mid-session resets its connection). */
  connectionErrors: string[];
  close(): Promise<void>;
}

export async function startSmtpSink(): Promise<SmtpSink> {
  const sink: SmtpSink = {
    port: 0,
    url: '',
    received: [],
    refuse: new Set(),
    deferOnce: new Set(),
    bounceAll: false,
    delayMs: 0,
    onMessage: null,
    connectionErrors: [],
    close: async () => {},
  };
  const auths = new Map<string, { username: string; password: string }>();
  const server = new SMTPServer({
    secure: false,
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    authOptional: true,
    logger: false,
    size: 10 * 1024 * 1024,
    onAuth(auth, session, cb) {
      auths.set(session.id, { username: auth.username ?? '', password: auth.password ?? '' });
      cb(null, { user: auth.username });
    },
    onRcptTo(address, _session, cb) {
      if (sink.deferOnce.delete(address.address.toLowerCase())) {
        const err = new Error('Mailbox busy, try again later') as Error & { responseCode: number };
        err.responseCode = 451;
        return cb(err);
      }
      if (sink.refuse.has(address.address.toLowerCase())) {
        const err = new Error('No such user here') as Error & { responseCode: number };
        err.responseCode = 550;
        return cb(err);
      }
      cb();
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', async () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        if (sink.bounceAll) {
          const err = new Error('Message rejected: content refused') as Error & { responseCode: number };
          err.responseCode = 554;
          return cb(err);
        }
        const mail = await simpleParser(raw);
        if (sink.delayMs) await new Promise((r) => setTimeout(r, sink.delayMs));
        const received: ReceivedMail = {
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          auth: auths.get(session.id) ?? null,
          raw,
          mail,
        };
        sink.received.push(received);
        sink.onMessage?.(received);
        cb();
      });
    },
  });
  // A client that dies mid-session (the crash tests kill the sender on purpose) resets its connection, and
  // smtp-server reports that as an 'error' event on the server: without a listener it would be thrown.
  server.on('error', (err: Error) => void sink.connectionErrors.push(err.message));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.server.address() as AddressInfo).port;
  sink.port = port;
  sink.url = `smtp://127.0.0.1:${port}`;
  sink.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return sink;
}

export interface SmsSink {
  url: string;
  received: { to: string; from: string; body: string; account: string; authorization: string }[];
  /** Numbers answered 400 with Twilio's code 21610 (the recipient opted out). */
  refuse: Set<string>;
  close(): Promise<void>;
}

export async function startSmsSink(): Promise<SmsSink> {
  const sink: SmsSink = { url: '', received: [], refuse: new Set(), close: async () => {} };
  let n = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const m = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/.exec(req.url ?? '');
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      res.setHeader('content-type', 'application/json');
      if (req.method !== 'POST' || !m) {
        res.statusCode = 404;
        return res.end(JSON.stringify({ code: 20404, message: 'not found' }));
      }
      const to = form.get('To') ?? '';
      if (sink.refuse.has(to)) {
        res.statusCode = 400;
        return res.end(JSON.stringify({ code: 21610, message: `Attempt to send to unsubscribed recipient ${to}`, status: 400 }));
      }
      sink.received.push({
        to,
        from: form.get('From') ?? '',
        body: form.get('Body') ?? '',
        account: m[1]!,
        authorization: req.headers.authorization ?? '',
      });
      res.statusCode = 201;
      res.end(JSON.stringify({ sid: `SM${String(++n).padStart(32, '0')}`, status: 'queued' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  sink.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  sink.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return sink;
}
