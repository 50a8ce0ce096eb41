import type { Database } from '@clinic/db';
import type { Logger } from 'pino';

/** One read of patient data (migration 0064): who, whose, what, under which action context. */
export interface AccessEntry {
  organizationId: string;
  actorUserId: string | null;
  patientIds: string[];
  action: string;
  targetId?: string | null;
  actionContext?: 'impersonation' | 'break_glass' | 'caregiver' | null;
  contextId?: string | null;
  method?: string | null;
  /** The route pattern (not the URL: no ids or query). */
  route?: string | null;
  requestId: string;
  ip: string | null;
}

export interface AccessLog {
  /** Resolves once the entries are stored; rejects when they could not be (the read must then fail). */
  record(entries: AccessEntry[]): Promise<void>;
  /** Stores what is pending and stops taking entries. */
  close(): Promise<void>;
}

interface Pending {
  entries: AccessEntry[];
  resolve(): void;
  reject(err: unknown): void;
}

/** Entries in one insert at the most; more wait for the next. */
const MAX_BATCH = 1000;

/**
 * The writer of the access log: group commit in the application. The first entry of a batch schedules a
 * flush at the next turn of the event loop; whatever arrives until the flush runs, and while one is in
 * flight, goes into the same insert (one transaction, one WAL flush). A read is answered only after the
 * flush holding its entry has committed, so an entry is never lost by a crash of the process, and the cost
 * per read is a share of one commit rather than a commit of its own.
 */
export function createAccessLog(db: Database, logger: Logger): AccessLog {
  const queue: Pending[] = [];
  let flushing: Promise<void> | null = null;
  let scheduled = false;
  let closed = false;

  async function flush(): Promise<void> {
    scheduled = false;
    while (queue.length) {
      const batch: Pending[] = [];
      let size = 0;
      while (queue.length && (size === 0 || size + queue[0]!.entries.length <= MAX_BATCH)) {
        const p = queue.shift()!;
        batch.push(p);
        size += p.entries.length;
      }
      const rows = batch.flatMap((p) =>
        p.entries.map((e) => ({
          organization_id: e.organizationId,
          actor_user_id: e.actorUserId,
          patient_ids: e.patientIds,
          action: e.action,
          target_id: e.targetId ?? null,
          action_context: e.actionContext ?? null,
          context_id: e.contextId ?? null,
          method: e.method ?? null,
          route: e.route ?? null,
          request_id: e.requestId,
          ip: e.ip,
        })),
      );
      try {
        await db.transaction((tx) =>
          tx.query(
            `insert into patient_access_log (organization_id, actor_user_id, patient_ids, action, target_id, action_context, context_id,
               method, route, request_id, ip)
             select x.organization_id, x.actor_user_id, x.patient_ids, x.action, x.target_id, x.action_context, x.context_id, x.method,
               x.route, x.request_id, x.ip
             from jsonb_to_recordset($1::jsonb) as x(organization_id uuid, actor_user_id uuid, patient_ids uuid[], action text,
               target_id uuid, action_context text, context_id uuid, method text, route text, request_id text, ip inet)`,
            [JSON.stringify(rows)],
          ),
        );
        for (const p of batch) p.resolve();
      } catch (err) {
        logger.error({ err, entries: rows.length }, 'access log entries could not be stored; the reads they record are refused');
        for (const p of batch) p.reject(err);
      }
    }
  }

  function schedule(): void {
    if (scheduled || flushing) return;
    scheduled = true;
    setImmediate(() => {
      flushing = flush().finally(() => {
        flushing = null;
        // Entries that came while the last insert ran start the next batch.
        if (queue.length) schedule();
      });
    });
  }

  return {
    record(entries) {
      if (!entries.length) return Promise.resolve();
      if (closed) return Promise.reject(new Error('the access log is closed'));
      return new Promise<void>((resolve, reject) => {
        queue.push({ entries, resolve, reject });
        schedule();
      });
    },
    async close() {
      closed = true;
      while (flushing || scheduled || queue.length) {
        if (flushing) await flushing;
        else if (queue.length && !scheduled) schedule();
        await new Promise((r) => setImmediate(r));
      }
    },
  };
}
