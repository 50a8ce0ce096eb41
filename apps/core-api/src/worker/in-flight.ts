/** Work still running, so that a stopping worker can wait for it before its caller closes the database. */
export interface InFlight {
  /** Counts `p` until it settles; returns it unchanged. */
  track<T>(p: Promise<T>): Promise<T>;
  readonly size: number;
  /** Resolves once nothing is running, including what started while it waited. */
  settled(): Promise<void>;
}

export function inFlight(): InFlight {
  const running = new Set<Promise<unknown>>();
  return {
    track(p) {
      running.add(p);
      const done = () => void running.delete(p);
      p.then(done, done);
      return p;
    },
    get size() {
      return running.size;
    },
    async settled() {
      while (running.size) await Promise.allSettled([...running]);
    },
  };
}
