import type { Database } from '@clinic/db';
import { AppError } from '@clinic/http-kit';
import type { HoldChange, HoldFeed } from './hold-feed.ts';
import type { HoldKey, HoldState } from './queries.ts';
import { followHolds, holdForStream } from './service.ts';

/**
 * The open hold streams of one instance (GET /v1/public/holds/{id}/stream), as server-sent events:
 *
 *   event: remaining   data: {"seconds_left":599,"expires_at":"..."}   at once, then at each whole second
 *   : keep-alive                                                      a comment every 15 s, for proxies
 *   event: released | converted | expired   data: {"status":...,"appointment_id":...}   once, then the end
 *
 * Nothing here runs per stream: one timer walks every stream four times a second and writes only when
 * a stream's whole second changes; a change of a hold comes from the feed (NOTIFY on PostgreSQL, the
 * in-process bus on PGlite) and ends that hold's streams; the database is read for many holds in one
 * statement, when a countdown reaches zero (and then the hold is ended as expired in the database
 * first, so `expired` is never said of a hold that a booking converted), when a live hold changed,
 * and every `feed.reconcileMs` as a safety net (changes made behind the API's back on PGlite,
 * NOTIFYs lost while the listening connection was down).
 *
 * The countdown runs on the monotonic clock from the milliseconds left by the database's clock, so
 * the instance's wall clock does not matter.
 */

const TICK_MS = 250;
const HEARTBEAT_MS = 15_000;
/** How long close() lets a stream's last bytes leave before it cuts the connection. */
const CLOSE_GRACE_MS = 2000;

type Final = 'released' | 'converted' | 'expired';
const isFinal = (status: string): status is Final => status === 'released' || status === 'converted' || status === 'expired';

/**
 * Where a stream's bytes go: the HTTP response itself (a ServerResponse fits), written directly
 * rather than through a piped PassThrough, which measured 6 KiB more per open stream.
 */
export interface EventSink {
  write(chunk: string): boolean;
  end(chunk?: string): void;
  destroy(): void;
  readonly writableNeedDrain: boolean;
  readonly destroyed: boolean;
  once(event: 'close', listener: () => void): unknown;
}

const DETACHED: EventSink = {
  write: () => false,
  end: () => undefined,
  destroy: () => undefined,
  writableNeedDrain: false,
  destroyed: true,
  once: () => undefined,
};

interface Watch {
  key: HoldKey;
  ip: string;
  out: EventSink;
  /** performance.now() when the hold's time is up. */
  deadline: number;
  expiresAt: string;
  lastSeconds: number;
  lastBeat: number;
  /** A change heard while the stream was opening; applied once its first read is done. */
  early: HoldChange | null;
  /** The first read is done and the stream is sent. */
  open: boolean;
  done: boolean;
  counted: boolean;
}

export interface HoldStreams {
  /**
   * Opens a stream for the hold's holder: 404 for a wrong secret and 429 over the per-IP bound (thrown,
   * before anything is written). Once the hold is read, `begin` is called once and gives the sink the
   * events go to (the caller sends its headers then); null when the client has gone meanwhile. Resolves
   * when the first event is written (a final one when the hold has ended).
   */
  open(call: { id: string; secret: unknown; ip: string; begin: () => EventSink | null }): Promise<void>;
  /** A change this process committed (release, booking): the feed decides who hears it. */
  announce(c: HoldChange): void;
  /** Ends every stream (no final event: the hold has not ended; the client reconnects elsewhere) and the feed. */
  close(): Promise<void>;
}

export interface HoldStreamsDeps {
  db: Database;
  feed: HoldFeed;
  /** Open streams allowed per client address on this instance (SCHEDULING_HOLD_STREAMS_PER_IP). */
  perIp: number;
  logger: { warn(obj: object, msg: string): void };
}

const shuttingDown = () =>
  new AppError(503, 'shutting_down', 'The server is shutting down; retry, another instance will answer.', {
    headers: { 'retry-after': '1' },
  });

export function createHoldStreams(deps: HoldStreamsDeps): HoldStreams {
  const { db, feed, logger } = deps;
  const byHold = new Map<string, Set<Watch>>();
  const perIp = new Map<string, number>();
  /** Holds whose countdown reached zero (read with settle), and holds to read again. */
  const due = new Set<string>();
  const recheck = new Set<string>();
  let reading: Promise<void> | null = null;
  let retryAt = 0;
  let ticker: NodeJS.Timeout | null = null;
  let lastReconcile = performance.now();
  let closing = false;
  let count = 0;

  const unsubscribe = feed.subscribe({
    change(c) {
      const set = byHold.get(c.id);
      if (!set) return;
      for (const w of [...set]) {
        if (!w.open) w.early = c;
        else if (isFinal(c.status)) finish(w, c.status, c.appointment_id);
        else recheck.add(c.id);
      }
      if (recheck.size) read();
    },
    gap() {
      for (const id of byHold.keys()) recheck.add(id);
      read();
    },
  });

  function write(w: Watch, text: string) {
    if (!w.done) w.out.write(text);
  }

  function remaining(w: Watch, seconds: number) {
    w.lastSeconds = seconds;
    write(w, `event: remaining\ndata: {"seconds_left":${seconds},"expires_at":"${w.expiresAt}"}\n\n`);
  }

  function finish(w: Watch, status: Final, appointmentId: string | null) {
    if (w.done) return;
    const data = status === 'converted' ? { status, appointment_id: appointmentId } : { status };
    w.done = true;
    w.out.end(`event: ${status}\ndata: ${JSON.stringify(data)}\n\n`);
    forget(w);
  }

  function forget(w: Watch) {
    const set = byHold.get(w.key.id);
    if (set?.delete(w) && set.size === 0) byHold.delete(w.key.id);
    if (!w.counted) return;
    w.counted = false;
    count--;
    const n = (perIp.get(w.ip) ?? 1) - 1;
    if (n > 0) perIp.set(w.ip, n);
    else perIp.delete(w.ip);
    if (count === 0 && ticker) {
      clearInterval(ticker);
      ticker = null;
    }
  }

  /** A state read from the database; a hold that is gone (its organization was deleted) has expired for its holder. */
  function apply(w: Watch, s: HoldState | undefined) {
    if (!s) return finish(w, 'expired', null);
    if (isFinal(s.status)) return finish(w, s.status, s.appointment_id);
    w.deadline = performance.now() + s.ms_left;
    w.expiresAt = s.expires_at.toISOString();
  }

  /** Reads the holds in `due` (settling them) and `recheck`, many in one statement, until both are empty. */
  async function readAll() {
    while (due.size || recheck.size) {
      const settle = due.size > 0;
      const ids = [...new Set([...due, ...recheck])];
      due.clear();
      recheck.clear();
      const keys = ids.flatMap((id) => {
        const w = [...(byHold.get(id) ?? [])].find((x) => x.open);
        return w ? [w.key] : [];
      });
      if (!keys.length) continue;
      const states = new Map((await followHolds(db, keys, settle)).map((s) => [s.id, s]));
      for (const k of keys) for (const w of [...(byHold.get(k.id) ?? [])]) if (w.open) apply(w, states.get(k.id));
    }
  }

  function read() {
    if (reading || performance.now() < retryAt) return;
    reading = readAll()
      .catch((err: Error) => {
        // Not before a pause: the next tick finds due holds again, and reconciliation rereads the rest.
        retryAt = performance.now() + 2000;
        logger.warn({ err: err.message }, 'hold streams: reading holds failed');
      })
      .finally(() => {
        reading = null;
      });
  }

  function tick() {
    const now = performance.now();
    for (const set of byHold.values()) {
      for (const w of set) {
        if (!w.open || w.done) continue;
        const ms = w.deadline - now;
        if (ms <= 0) due.add(w.key.id);
        // A reader that does not keep up misses countdown ticks and heartbeats, never its final event.
        else if (!w.out.writableNeedDrain) {
          const seconds = Math.ceil(ms / 1000);
          if (seconds !== w.lastSeconds) remaining(w, seconds);
          if (now - w.lastBeat >= HEARTBEAT_MS) {
            w.lastBeat = now;
            write(w, ': keep-alive\n\n');
          }
        }
      }
    }
    if (now - lastReconcile >= feed.reconcileMs) {
      lastReconcile = now;
      for (const id of byHold.keys()) recheck.add(id);
    }
    if (due.size || recheck.size) read();
  }

  return {
    async open({ id, secret, ip, begin }) {
      if (closing) throw shuttingDown();
      const n = perIp.get(ip) ?? 0;
      if (n >= deps.perIp)
        throw new AppError(429, 'rate_limited', `Too many open hold streams from this address (${deps.perIp}); close one first.`, {
          headers: { 'retry-after': '10' },
        });
      perIp.set(ip, n + 1);
      count++;
      const now = performance.now();
      const w: Watch = {
        key: { organization_id: '', id },
        ip,
        out: DETACHED,
        deadline: now,
        expiresAt: '',
        lastSeconds: -1,
        lastBeat: now,
        early: null,
        open: false,
        done: false,
        counted: true,
      };
      // Followed from before the first read, so that a change committed meanwhile is not lost.
      const set = byHold.get(id) ?? new Set<Watch>();
      byHold.set(id, set);
      set.add(w);
      let state: HoldState | undefined;
      try {
        await feed.ready();
        state = await holdForStream(db, id, secret);
        w.key = { organization_id: state.organization_id, id };
        // Past its time but not yet swept: end it now, so that the answer is final.
        if (state.status === 'live' && state.ms_left <= 0) state = (await followHolds(db, [w.key], true))[0];
        if (closing) throw shuttingDown();
      } catch (err) {
        w.done = true;
        forget(w);
        throw err;
      }
      const out = begin();
      if (!out || out.destroyed) {
        w.done = true;
        forget(w);
        return;
      }
      w.out = out;
      out.once('close', () => {
        w.done = true;
        forget(w);
      });
      w.open = true;
      const early = w.early;
      if (state && !isFinal(state.status) && early && isFinal(early.status)) finish(w, early.status, early.appointment_id);
      else apply(w, state);
      if (!w.done) {
        remaining(w, Math.max(1, Math.ceil((w.deadline - performance.now()) / 1000)));
        if (early) recheck.add(id);
        ticker ??= setInterval(tick, TICK_MS);
        ticker.unref();
        if (recheck.size) read();
      }
    },

    announce(c) {
      feed.announce(c);
    },

    async close() {
      closing = true;
      unsubscribe();
      if (ticker) clearInterval(ticker);
      ticker = null;
      const all = [...byHold.values()].flatMap((s) => [...s]).filter((w) => w.open && !w.done);
      await Promise.all(
        all.map(
          (w) =>
            new Promise<void>((resolve) => {
              if (w.out.destroyed) return resolve();
              const cut = setTimeout(() => w.out.destroy(), CLOSE_GRACE_MS);
              w.out.once('close', () => {
                clearTimeout(cut);
                resolve();
              });
              w.done = true;
              w.out.end();
            }),
        ),
      );
      await reading;
      await feed.close();
    },
  };
}
