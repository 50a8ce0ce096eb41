import { normalizeEmail, isUuid } from '@clinic/http-kit';
import { migrate, type Database } from '@clinic/db';
import { verifyChain } from '../modules/audit/chain.ts';
import { CHECKPOINT_KEY_LABEL, resignCheckpoints } from '../modules/audit/checkpoints.ts';
import { recordChange } from '../platform/audit.ts';
import { reencryptProviders, reencryptWebhookSecrets } from '../modules/providers/rotation.ts';
import type { SecretBox } from '../platform/secrets.ts';
import { MIGRATIONS_DIR } from '@clinic/db';
import { formatOutbox, listOutbox } from '../modules/messages/outbox.ts';
import { deleteSuperadmin, insertSuperadmin, membershipsOf, userByEmailCreating } from './queries.ts';

export const USAGE = `usage:
  npm run cli -- migrate                      apply pending database migrations
  npm run cli -- superadmin grant <email>     make that user a platform superadmin (the user row is
                                              created by email if needed and linked on first sign-in)
  npm run cli -- superadmin revoke <email>    remove the superadmin platform role
  npm run cli -- audit verify <org id|platform>
                                              check an audit hash chain from its latest signed
                                              checkpoint (retention); names the first broken link
  npm run cli -- providers re-encrypt         re-seal provider credentials and webhook signing secrets,
                                              and re-sign audit checkpoints, under the current master key
  npm run cli -- messages outbox [count]      list the newest messages written to the outbox folder
                                              (MESSAGES_OUTBOX_DIR; the embedded default's email and SMS)`;

export class UsageError extends Error {}
/** A check that ran and found a problem (exit code 1, message without a stack). */
export class CheckFailedError extends Error {}

/** What some commands need beyond the database: the master keys (built only when a command asks). */
export interface CommandDeps {
  secrets?: () => Promise<SecretBox>;
}

/**
 * The commands behind `npm run cli`. They run against a Database, so the same code serves a direct
 * run and a run handed to the embedded server's control endpoint. Superadmin is granted only here:
 * a direct database change, never an API route (spec 5.6).
 */
type Command =
  | { verb: 'migrate' }
  | { verb: 'grant' | 'revoke'; email: string }
  | { verb: 'audit-verify'; orgId: string | null }
  | { verb: 'providers-reencrypt' }
  | { verb: 'messages-outbox'; limit: number };

/** Validates the arguments without touching anything, so a usage error never opens the database. */
export function parseCommand(args: string[]): Command {
  const [verb, sub, arg, ...rest] = args;
  if (verb === 'migrate' && args.length === 1) return { verb: 'migrate' };
  if (verb === 'audit' && sub === 'verify' && arg && rest.length === 0) {
    if (arg === 'platform') return { verb: 'audit-verify', orgId: null };
    if (!isUuid(arg)) throw new UsageError(`"${arg}" is neither an organization id nor "platform"`);
    return { verb: 'audit-verify', orgId: arg.toLowerCase() };
  }
  if (verb === 'providers' && sub === 're-encrypt' && args.length === 2) return { verb: 'providers-reencrypt' };
  if (verb === 'messages' && sub === 'outbox' && rest.length === 0) {
    if (arg !== undefined && !/^[1-9][0-9]{0,4}$/.test(arg)) throw new UsageError(`"${arg}" is not a count of messages (1 to 99999)`);
    return { verb: 'messages-outbox', limit: arg ? Number(arg) : 20 };
  }
  if (verb === 'superadmin' && (sub === 'grant' || sub === 'revoke') && arg && rest.length === 0) {
    const checked = normalizeEmail(arg);
    if (!checked.ok) throw new UsageError(`"${arg}" is not a usable email address: it ${checked.problem}`);
    return { verb: sub, email: checked.email };
  }
  throw new UsageError(USAGE);
}

/** The outbox listing reads a folder, not the database: it never needs the data folder's lock. */
export async function runFileCommand(args: string[], outboxDir: string): Promise<string | null> {
  const command = parseCommand(args);
  if (command.verb !== 'messages-outbox') return null;
  return formatOutbox(outboxDir, await listOutbox(outboxDir, command.limit));
}

export async function runCommand(db: Database, args: string[], deps: CommandDeps = {}): Promise<string> {
  const command = parseCommand(args);
  if (command.verb === 'messages-outbox') throw new UsageError('messages outbox reads the outbox folder (runFileCommand)');
  if (command.verb === 'audit-verify') {
    // The master keys check the retention checkpoints' signatures; a chain never cut needs none.
    const keys = deps.secrets ? (await deps.secrets()).derivedKeys(CHECKPOINT_KEY_LABEL) : [];
    const r = await verifyChain(db, command.orgId, keys);
    const from = r.from
      ? ` after the checkpoint at entry ${r.from.cut_seq} (${new Date(r.from.created_at).toISOString()}; older entries removed by retention)`
      : '';
    if (!r.broken) return `audit chain ${r.chain}: ${r.checked} entries${from}, intact`;
    throw new CheckFailedError(
      `audit chain ${r.chain}: BROKEN at entry ${r.broken.chain_seq}${r.broken.id ? ` (id ${r.broken.id})` : ''}: ${r.broken.reason}; ${r.checked} entries before it are intact`,
    );
  }
  if (command.verb === 'providers-reencrypt') {
    if (!deps.secrets) throw new UsageError('providers re-encrypt needs the master keys (MASTER_KEYS)');
    const box = await deps.secrets();
    const r = await reencryptProviders(db, box);
    const w = await reencryptWebhookSecrets(db, box);
    const a = await resignCheckpoints(db, box);
    const unchecked = a.unchecked ? `, ${a.unchecked} NOT re-signed (they do not verify under MASTER_KEYS: run audit verify)` : '';
    return `provider credentials: ${r.resealed} re-encrypted under key "${r.keyId}", ${r.current} already current; webhook secrets: ${w.resealed} re-encrypted, ${w.current} already current; audit checkpoints: ${a.resigned} re-signed, ${a.current} already current${unchecked}`;
  }
  if (command.verb === 'migrate') {
    const applied = await migrate(db, MIGRATIONS_DIR);
    return applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date';
  }
  return command.verb === 'grant' ? grantSuperadmin(db, command.email) : revokeSuperadmin(db, command.email);
}

async function grantSuperadmin(db: Database, email: string): Promise<string> {
  return db.transaction(async (tx) => {
    const user = await userByEmailCreating(tx, email);
    if (user.kind !== 'human') throw new UsageError(`${email} is a ${user.kind}: superadmin is only for human principals`);
    // Spec 5 rule 6: superadmins hold no organization memberships.
    const orgs = await membershipsOf(tx, user.id);
    if (orgs.length)
      throw new UsageError(
        `${email} is a member of ${orgs.map((o) => `${o.name} (${o.id})`).join(', ')}; superadmins hold no organization memberships. ` +
          'Remove those memberships first (DELETE /v1/organizations/{id}/members/{user_id}), or grant superadmin to a separate account.',
      );
    if (!(await insertSuperadmin(tx, user.id))) return `${email} is already a superadmin`;
    await recordChange(
      tx,
      null,
      'platform_role.granted',
      { type: 'user', id: user.id, organizationId: null },
      { role: 'superadmin', via: 'cli' },
    );
    return `${email} is now a superadmin (user ${user.id})`;
  });
}

async function revokeSuperadmin(db: Database, email: string): Promise<string> {
  return db.transaction(async (tx) => {
    const userId = await deleteSuperadmin(tx, email);
    if (!userId) return `${email} was not a superadmin`;
    await recordChange(
      tx,
      null,
      'platform_role.revoked',
      { type: 'user', id: userId, organizationId: null },
      { role: 'superadmin', via: 'cli' },
    );
    return `${email} is no longer a superadmin`;
  });
}
