import type { Database } from '@clinic/db';
import pg from 'pg';
import type { HoldRow } from './queries.ts';

/** How a hold changed: what migration 0069's trigger announces on the channel hold_events. */
export interface HoldChange {
  organization_id: string;
  id: string;
  status: HoldRow['status'];
  appointment_id: string | null;
}

export interface HoldFeedListener {
  change(c: HoldChange): void;
  /** Changes may have been missed (the listening connection was down): read every followed hold again. */
  gap(): void;
}

/**
 * Where an instance hears that a hold changed, wherever the change was made.
 * - listen (PostgreSQL): one dedicated connection per instance LISTENs on hold_events; the trigger of
 *   migration 0069 notifies from the transaction that changes a hold, so every instance hears every
 *   committed change, including changes made by hand in SQL. `announce` is not needed.
 * - local (PGlite, one process): the routes of this process `announce` the changes they committed, to
 *   every instance built on the same database object. Changes made behind the API's back are found by
 *   the streams' reconciliation read (`reconcileMs`).
 */
export interface HoldFeed {
  readonly kind: 'listen' | 'local';
  /** How often the streams of an instance read their holds again, whatever the feed says. */
  readonly reconcileMs: number;
  /**
   * Resolves true once a change committed from now on will be heard; false when the feed cannot
   * promise it for now (the connection is down), in which case reconciliation covers.
   */
  ready(): Promise<boolean>;
  announce(c: HoldChange): void;
  subscribe(l: HoldFeedListener): () => void;
  close(): Promise<void>;
}

export const HOLD_CHANNEL = 'hold_events';

/** One in-process bus per database object: instances that share an embedded database hear each other. */
const buses = new WeakMap<Database, Set<HoldFeedListener>>();

export function localHoldFeed(db: Database): HoldFeed {
  const listeners = buses.get(db) ?? new Set<HoldFeedListener>();
  buses.set(db, listeners);
  const mine = new Set<HoldFeedListener>();
  return {
    kind: 'local',
    reconcileMs: 2000,
    ready: async () => true,
    announce(c) {
      // After the caller's reply is on its way: a listener's work never delays the route that changed the hold.
      queueMicrotask(() => {
        for (const l of listeners) l.change(c);
      });
    },
    subscribe(l) {
      listeners.add(l);
      mine.add(l);
      return () => {
        listeners.delete(l);
        mine.delete(l);
      };
    },
    async close() {
      for (const l of mine) listeners.delete(l);
      mine.clear();
    },
  };
}

interface FeedLogger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

function parseChange(payload: string | undefined): HoldChange | null {
  if (!payload) return null;
  try {
    const c = JSON.parse(payload) as HoldChange;
    return typeof c.id === 'string' && typeof c.status === 'string' ? c : null;
  } catch {
    return null;
  }
}

/**
 * LISTEN hold_events on a connection of its own (not the pool's: a pooled connection goes back to
 * other work, and PgBouncer in transaction mode would drop the LISTEN). Opened on first use, kept for
 * the instance's life, opened again after a failure with a growing pause (1 s to 30 s); after each
 * reconnection the listeners are told of a gap, since NOTIFYs sent meanwhile are lost.
 */
export function listenHoldFeed(url: string, logger: FeedLogger): HoldFeed {
  const listeners = new Set<HoldFeedListener>();
  let client: pg.Client | null = null;
  let connecting: Promise<boolean> | null = null;
  let retry: NodeJS.Timeout | null = null;
  let failures = 0;
  let missed = false;
  let closed = false;

  const lost = (c: pg.Client, err?: Error) => {
    if (client !== c) return;
    client = null;
    missed = true;
    c.removeAllListeners('notification');
    c.end().catch(() => undefined);
    if (closed) return;
    logger.warn({ err: err?.message }, 'hold events: listening connection lost; reconnecting');
    schedule();
  };

  const schedule = () => {
    if (retry || closed) return;
    const pause = Math.min(30_000, 1000 * 2 ** Math.min(failures, 5));
    retry = setTimeout(() => {
      retry = null;
      void ready();
    }, pause);
    retry.unref();
  };

  const connect = async (): Promise<boolean> => {
    const c = new pg.Client({
      connectionString: url,
      application_name: 'clinic-platform-hold-events',
      keepAlive: true,
      connectionTimeoutMillis: 5000,
    });
    c.on('notification', (msg) => {
      if (msg.channel !== HOLD_CHANNEL) return;
      const change = parseChange(msg.payload);
      if (change) for (const l of listeners) l.change(change);
    });
    c.on('error', (err) => lost(c, err));
    c.on('end', () => lost(c));
    try {
      await c.connect();
      await c.query(`listen ${HOLD_CHANNEL}`);
    } catch (err) {
      c.end().catch(() => undefined);
      failures++;
      missed = true;
      logger.warn({ err: (err as Error).message, failures }, 'hold events: cannot listen; streams fall back to reading their holds');
      schedule();
      return false;
    }
    if (closed) {
      await c.end().catch(() => undefined);
      return false;
    }
    failures = 0;
    client = c;
    if (missed) {
      missed = false;
      logger.info({}, 'hold events: listening again');
      for (const l of listeners) l.gap();
    }
    return true;
  };

  const ready = (): Promise<boolean> => {
    if (closed) return Promise.resolve(false);
    if (client) return Promise.resolve(true);
    connecting ??= connect().finally(() => {
      connecting = null;
    });
    return connecting;
  };

  return {
    kind: 'listen',
    reconcileMs: 15_000,
    ready,
    announce: () => undefined,
    subscribe(l) {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    async close() {
      closed = true;
      if (retry) clearTimeout(retry);
      listeners.clear();
      await connecting?.catch(() => false);
      const c = client;
      client = null;
      await c?.end().catch(() => undefined);
    },
  };
}
