import { migrate, type Database } from '@clinic/db';
import { insertAudit } from '../modules/audit/queries.ts';
import { MIGRATIONS_DIR } from '../platform/runtime.ts';

export const USAGE = `usage:
  npm run cli -- migrate                      apply pending database migrations
  npm run cli -- superadmin grant <email>     make that user a platform superadmin (the user row is
                                              created by email if needed and linked on first sign-in)
  npm run cli -- superadmin revoke <email>    remove the superadmin platform role`;

export class UsageError extends Error {}

/**
 * The commands behind `npm run cli`. They run against a Database, so the same code serves a direct
 * run and a run handed to the embedded server's control endpoint. Superadmin is granted only here:
 * a direct database change, never an API route (spec 5.6).
 */
type Command = { verb: 'migrate' } | { verb: 'grant' | 'revoke'; email: string };

/** Validates the arguments without touching anything, so a usage error never opens the database. */
export function parseCommand(args: string[]): Command {
  const [verb, sub, arg, ...rest] = args;
  if (verb === 'migrate' && args.length === 1) return { verb: 'migrate' };
  if (verb === 'superadmin' && (sub === 'grant' || sub === 'revoke') && arg && rest.length === 0) {
    const email = arg.trim().toLowerCase();
    if (!/^[^@\s]+@[^@\s]+$/.test(email)) throw new UsageError(`"${arg}" is not an email address`);
    return { verb: sub, email };
  }
  throw new UsageError(USAGE);
}

export async function runCommand(db: Database, args: string[]): Promise<string> {
  const command = parseCommand(args);
  if (command.verb === 'migrate') {
    const applied = await migrate(db, MIGRATIONS_DIR);
    return applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date';
  }
  return command.verb === 'grant' ? grantSuperadmin(db, command.email) : revokeSuperadmin(db, command.email);
}

async function grantSuperadmin(db: Database, email: string): Promise<string> {
  return db.transaction(async (tx) => {
    await tx.query(`insert into users (email) values ($1) on conflict do nothing`, [email]);
    const { rows } = await tx.query<{ id: string; kind: string }>('select id, kind from users where lower(email) = $1', [email]);
    const user = rows[0]!;
    if (user.kind !== 'human') throw new UsageError(`${email} is a ${user.kind}: superadmin is only for human principals`);
    const granted = await tx.query(
      `insert into platform_memberships (user_id, role) values ($1, 'superadmin') on conflict do nothing returning user_id`,
      [user.id],
    );
    if (granted.rowCount === 0) return `${email} is already a superadmin`;
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
    const { rows } = await tx.query<{ user_id: string }>(
      `delete from platform_memberships pm using users u
       where pm.user_id = u.id and lower(u.email) = $1 and pm.role = 'superadmin' returning pm.user_id`,
      [email],
    );
    if (!rows[0]) return `${email} was not a superadmin`;
    await insertAudit(tx, {
      organizationId: null,
      actorUserId: null,
      action: 'platform_role.revoked',
      entityType: 'user',
      entityId: rows[0].user_id,
      data: { role: 'superadmin', via: 'cli' },
    });
    return `${email} is no longer a superadmin`;
  });
}
