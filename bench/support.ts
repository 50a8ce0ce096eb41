import autocannon from 'autocannon';

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

/** Bounded load on a loopback URL: a fixed duration, a fixed number of connections, then it stops. */
export async function load(
  url: string,
  headers: Record<string, string>,
  seconds = Number(process.env.BENCH_SECONDS ?? 8),
  connections = 16,
): Promise<LoadResult> {
  const r = await autocannon({ url, headers, connections, duration: seconds, workers: 1 });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx };
}

export function row(name: string, r: LoadResult): string {
  return `${name.padEnd(44)} ${r.rps.toFixed(0).padStart(8)} req/s   p50 ${String(r.p50).padStart(4)} ms   p99 ${String(r.p99).padStart(4)} ms   errors ${r.errors + r.non2xx}`;
}
