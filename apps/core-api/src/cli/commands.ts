import { normalizeEmail } from '@clinic/http-kit';
import { migrate, type Database } from '@clinic/db';
import { verifyChain } from '../modules/audit/chain.ts';
import { insertAudit } from '../platform/audit.ts';
import { reencryptProviders, reencryptWebhookSecrets } from '../modules/providers/rotation.ts';
import type { SecretBox } from '../platform/secrets.ts';
import { MIGRATIONS_DIR } from '@clinic/db';
import { deleteSuperadmin, insertSuperadmin, userByEmailCreating } from './queries.ts';

export const USAGE = `usage:
  npm run cli -- migrate                      apply pending database migrations
  npm run cli -- superadmin grant <email>     make that user a platform superadmin (the user row is
                                              created by email if needed and linked on first sign-in)
  npm run cli -- superadmin revoke <email>    remove the superadmin platform role
  npm run cli -- audit verify <org id|platform>
                                              check an audit hash chain; names the first broken link
  npm run cli -- providers re-encrypt         re-seal provider credentials and webhook signing secrets
                                              under the current master key`;

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
  | { verb: 'providers-reencrypt' };

/** Validates the arguments without touching anything, so a usage error never opens the database. */
export function parseCommand(args: string[]): Command {
  const [verb, sub, arg, ...rest] = args;
  if (verb === 'migrate' && args.length === 1) return { verb: 'migrate' };
  if (verb === 'audit' && sub === 'verify' && arg && rest.length === 0) {
    if (arg === 'platform') return { verb: 'audit-verify', orgId: null };
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(arg))
      throw new UsageError(`"${arg}" is neither an organization id nor "platform"`);
    return { verb: 'audit-verify', orgId: arg.toLowerCase() };
  }
  if (verb === 'providers' && sub === 're-encrypt' && args.length === 2) return { verb: 'providers-reencrypt' };
  if (verb === 'superadmin' && (sub === 'grant' || sub === 'revoke') && arg && rest.length === 0) {
    const checked = normalizeEmail(arg);
    if (!checked.ok) throw new UsageError(`"${arg}" is not a usable email address: it ${checked.problem}`);
    return { verb: sub, email: checked.email };
  }
  throw new UsageError(USAGE);
}

export async function runCommand(db: Database, args: string[], deps: CommandDeps = {}): Promise<string> {
  const command = parseCommand(args);
  if (command.verb === 'audit-verify') {
    const r = await verifyChain(db, command.orgId);
    if (!r.broken) return `audit chain ${r.chain}: ${r.checked} entries, intact`;
    throw new CheckFailedError(
      `audit chain ${r.chain}: BROKEN at entry ${r.broken.chain_seq}${r.broken.id ? ` (id ${r.broken.id})` : ''}: ${r.broken.reason}; ${r.checked} entries before it are intact`,
    );
  }
  if (command.verb === 'providers-reencrypt') {
    if (!deps.secrets) throw new UsageError('providers re-encrypt needs the master keys (MASTER_KEYS)');
    const box = await deps.secrets();
    const r = await reencryptProviders(db, box);
    const w = await reencryptWebhookSecrets(db, box);
    return `provider credentials: ${r.resealed} re-encrypted under key "${r.keyId}", ${r.current} already current; webhook secrets: ${w.resealed} re-encrypted, ${w.current} already current`;
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
    if (!(await insertSuperadmin(tx, user.id))) return `${email} is already a superadmin`;
    await insertAudit(tx, {
      organizationId: null,
      actorUserId: null,
      action: 'platform_role.granted',
      entityType: 'user',
      entityId: user.id,
      data: { role: 'superadmin', via: 'cli' },
    });
    return `${email} is now a superadmin (user ${user.id})`;
  });
}

async function revokeSuperadmin(db: Database, email: string): Promise<string> {
  return db.transaction(async (tx) => {
    const userId = await deleteSuperadmin(tx, email);
    if (!userId) return `${email} was not a superadmin`;
    await insertAudit(tx, {
      organizationId: null,
      actorUserId: null,
      action: 'platform_role.revoked',
      entityType: 'user',
      entityId: userId,
      data: { role: 'superadmin', via: 'cli' },
    });
    return `${email} is no longer a superadmin`;
  });
}
