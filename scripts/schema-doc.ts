/**
 * `npm run docs:schema`: writes docs/schema.sql, the current shape of every table, view and function of
 * the platform's schemas, read from the catalogs of a freshly migrated in-memory PGlite database (so
 * the output depends on the migrations only). A test fails while the committed file is stale.
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { MIGRATIONS_DIR, migrate, openPglite, type Queryable } from '@clinic/db';

export const SCHEMA_DOC = fileURLToPath(new URL('../docs/schema.sql', import.meta.url));
export const SCHEMA_DOC_COMMAND = 'npm run docs:schema';

/** The schemas the migrations create for the platform (pg-boss's own and the migration log left out). */
const SCHEMAS = `n.nspname not in ('pg_catalog', 'information_schema', 'pg_toast', 'app_meta', 'pgboss') and n.nspname not like 'pg_temp%' and n.nspname not like 'pg_toast_temp%'`;

async function lines(db: Queryable, sql: string): Promise<string[]> {
  return (await db.query<{ line: string }>(sql)).rows.map((r) => r.line);
}

/** The text of docs/schema.sql for the migrations in MIGRATIONS_DIR. */
export async function schemaDoc(): Promise<string> {
  const db = await openPglite();
  try {
    await migrate(db, MIGRATIONS_DIR);
    const out: string[] = [
      `-- The current schema, generated from the migrations by \`${SCHEMA_DOC_COMMAND}\`: do not edit by hand.`,
      '-- The migrations in packages/db/migrations are the source; this file shows where they have led.',
      '',
    ];
    const tables = (
      await db.query<{ oid: number; name: string; rls: boolean; forced: boolean }>(
        `select c.oid::int as oid, format('%I.%I', n.nspname, c.relname) as name, c.relrowsecurity as rls, c.relforcerowsecurity as forced
         from pg_class c join pg_namespace n on n.oid = c.relnamespace
         where c.relkind in ('r', 'p') and ${SCHEMAS} order by n.nspname, c.relname`,
      )
    ).rows;
    for (const t of tables) {
      const columns = await lines(
        db,
        `select format('  %I %s%s%s', a.attname, format_type(a.atttypid, a.atttypmod),
                  case when a.attnotnull then ' not null' else '' end,
                  coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '')) as line
         from pg_attribute a left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
         where a.attrelid = ${t.oid} and a.attnum > 0 and not a.attisdropped order by a.attnum`,
      );
      const constraints = await lines(
        db,
        `select format('  constraint %I %s', conname, pg_get_constraintdef(oid)) as line
         from pg_constraint where conrelid = ${t.oid} and contype <> 'n' order by contype, conname`,
      );
      out.push(`create table ${t.name} (`, [...columns, ...constraints].join(',\n'), ');');
      if (t.rls) out.push(`alter table ${t.name} enable row level security;`);
      if (t.forced) out.push(`alter table ${t.name} force row level security;`);
      out.push(
        ...(await lines(
          db,
          `select pg_get_indexdef(i.indexrelid) || ';' as line from pg_index i join pg_class c on c.oid = i.indexrelid
           where i.indrelid = ${t.oid} and not exists (select 1 from pg_constraint k where k.conindid = i.indexrelid)
           order by c.relname`,
        )),
        ...(await lines(
          db,
          `select format('create policy %I on ${t.name} as %s for %s to %s%s%s;', p.polname,
                    case when p.polpermissive then 'permissive' else 'restrictive' end,
                    case p.polcmd when 'r' then 'select' when 'a' then 'insert' when 'w' then 'update' when 'd' then 'delete' else 'all' end,
                    coalesce((select string_agg(case when r = 0 then 'public' else quote_ident(pg_get_userbyid(r)) end, ', ' order by 1)
                              from unnest(p.polroles) r), 'public'),
                    coalesce(' using (' || pg_get_expr(p.polqual, p.polrelid) || ')', ''),
                    coalesce(' with check (' || pg_get_expr(p.polwithcheck, p.polrelid) || ')', '')) as line
           from pg_policy p where p.polrelid = ${t.oid} order by p.polname`,
        )),
        ...(await lines(
          db,
          `select pg_get_triggerdef(oid) || ';' as line from pg_trigger where tgrelid = ${t.oid} and not tgisinternal order by tgname`,
        )),
        '',
      );
    }
    const views = await lines(
      db,
      `select format('create view %I.%I as%s', n.nspname, c.relname, E'\\n' || pg_get_viewdef(c.oid)) as line
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where c.relkind = 'v' and ${SCHEMAS} order by n.nspname, c.relname`,
    );
    if (views.length) out.push('-- Views', ...views.map((v) => `${v}\n`));
    const functions = await lines(
      db,
      `select format('%I.%I(%s) returns %s%s', n.nspname, p.proname, pg_get_function_identity_arguments(p.oid),
                     pg_get_function_result(p.oid), case when p.prosecdef then ' security definer' else '' end) as line
       from pg_proc p join pg_namespace n on n.oid = p.pronamespace
       where ${SCHEMAS} and p.prokind = 'f'
         and not exists (select 1 from pg_depend d where d.objid = p.oid and d.deptype = 'e')
       order by 1`,
    );
    out.push('-- Functions (signatures; the bodies are in the migrations)', ...functions.map((f) => `--   ${f}`), '');
    return `${out.join('\n').trimEnd()}\n`;
  } finally {
    await db.close();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await writeFile(SCHEMA_DOC, await schemaDoc());
  process.stdout.write(`${SCHEMA_DOC} written\n`);
}
