import { mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The embedded default's "provider" (no active email or SMS row): every message is written to a folder,
 * an email as the .eml file SMTP would have carried, an SMS as a small text file, so a newcomer sees what
 * would have been sent (`npm run cli -- messages outbox`). The file is named by the message's creation
 * time and id: a send repeated after a crash rewrites the same file instead of adding a second one.
 */
export async function writeOutboxFile(dir: string, name: string, content: Buffer | string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const path = join(dir, name);
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, content, { mode: 0o600 });
  await rename(tmp, path);
  return path;
}

export function outboxName(createdAt: Date, messageId: string, channel: 'email' | 'sms'): string {
  const stamp = createdAt.toISOString().replace(/[-:]/g, '').replace('.', '');
  return `${stamp}-${messageId}.${channel === 'email' ? 'eml' : 'sms.txt'}`;
}

export interface OutboxEntry {
  file: string;
  channel: 'email' | 'sms';
  date: string;
  to: string;
  subject: string;
}

/** Header value of a raw message (unfolded; encoded words left as they are, which a listing can show). */
function header(raw: string, name: string): string {
  const head = raw.split(/\r?\n\r?\n/, 1)[0] ?? '';
  const unfolded = head.replace(/\r?\n[ \t]+/g, ' ');
  const m = new RegExp(`^${name}:[ \\t]*(.*)$`, 'im').exec(unfolded);
  return m ? decodeWords(m[1]!.trim()) : '';
}

/** RFC 2047 encoded words (=?UTF-8?B?...?= and =?UTF-8?Q?...?=), as nodemailer writes non-ASCII headers. */
function decodeWords(v: string): string {
  return v.replace(/=\?([^?]+)\?([BbQq])\?([^?]*)\?=\s*/g, (_m, _cs: string, enc: string, text: string) =>
    enc.toUpperCase() === 'B'
      ? Buffer.from(text, 'base64').toString('utf8')
      : Buffer.from(
          text.replace(/_/g, ' ').replace(/=([0-9A-Fa-f]{2})/g, (_x, h: string) => String.fromCharCode(Number.parseInt(h, 16))),
          'latin1',
        ).toString('utf8'),
  );
}

/** The newest `limit` messages of the folder, newest first. A missing folder is an empty outbox. */
export async function listOutbox(dir: string, limit = 50): Promise<OutboxEntry[]> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => n.endsWith('.eml') || n.endsWith('.sms.txt'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  names.sort().reverse();
  const out: OutboxEntry[] = [];
  for (const name of names.slice(0, limit)) {
    const file = join(dir, name);
    const raw = (await readFile(file, 'utf8')).slice(0, 64 * 1024);
    const channel = name.endsWith('.eml') ? 'email' : 'sms';
    const date = header(raw, 'Date') || (await stat(file)).mtime.toUTCString();
    out.push({
      file,
      channel,
      date,
      to: header(raw, 'To'),
      subject: channel === 'email' ? header(raw, 'Subject') : (raw.split(/\r?\n\r?\n/)[1]?.slice(0, 60) ?? ''),
    });
  }
  return out;
}

export function formatOutbox(dir: string, entries: OutboxEntry[]): string {
  if (!entries.length) return `the outbox ${dir} is empty`;
  const lines = entries.map((e) => `${e.date}  ${e.channel.padEnd(5)}  ${e.to}  ${JSON.stringify(e.subject)}\n    ${e.file}`);
  return `${entries.length} message${entries.length === 1 ? '' : 's'} in ${dir} (newest first):\n${lines.join('\n')}`;
}
