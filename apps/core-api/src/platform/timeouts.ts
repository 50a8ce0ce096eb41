import { errors } from '@clinic/http-kit';
import type { FastifyContextConfig, FastifyInstance, FastifyReply } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A long operation (spec 8: 2 minutes): its request and its statements get LONG_OPERATION_TIMEOUT_MS. */
    longOperation?: boolean;
  }
}

/** Budgets in milliseconds (REQUEST_TIMEOUT_MS, QUERY_TIMEOUT_MS, LONG_OPERATION_TIMEOUT_MS). */
export interface Timeouts {
  requestMs: number;
  queryMs: number;
  longMs: number;
}

/**
 * The long operations of spec 8, named here so that their modules need not know about budgets: exports,
 * document renders and segment evaluation. Each gets LONG_OPERATION_TIMEOUT_MS for the request and for
 * each of its statements; every other route has REQUEST_TIMEOUT_MS and QUERY_TIMEOUT_MS.
 */
export const LONG_OPERATION_ROUTES = new Set([
  'GET /v1/audit-logs/export',
  'POST /v1/gdpr/export',
  'GET /v1/gdpr/exports/:id/download',
  'POST /v1/forms/:id/render',
  'POST /v1/appointments/:id/documents',
  'POST /v1/segments/:id/evaluate',
]);

/** The statement time-out of a route's transactions. */
export function queryBudget(config: FastifyContextConfig, t: Timeouts): number {
  return config.longOperation ? t.longMs : t.queryMs;
}

/** Runs fn after ms; returns what cancels it. Tests pass a clock they move themselves. */
export type Schedule = (fn: () => void, ms: number) => () => void;

const realSchedule: Schedule = (fn, ms) => {
  const timer = setTimeout(fn, ms);
  timer.unref();
  return () => clearTimeout(timer);
};

/**
 * The request time-out: a request that has not started its answer within its budget gets 504 `timeout`
 * in the error envelope. Its statements are bounded by their own time-out (the pipeline sets it per
 * transaction), so the work left behind stops too. An answer already under way (a streamed export, the
 * hold stream) is not cut: its stream has its own limit.
 */
export function installTimeouts(app: FastifyInstance, t: Timeouts, schedule: Schedule = realSchedule): void {
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (methods.some((m) => LONG_OPERATION_ROUTES.has(`${m} ${route.url}`))) route.config = { ...route.config, longOperation: true };
  });
  const cancels = new WeakMap<FastifyReply, () => void>();
  const stop = async (_request: unknown, reply: FastifyReply) => {
    cancels.get(reply)?.();
    cancels.delete(reply);
  };
  app.addHook('onRequest', async (request, reply) => {
    const budget = request.routeOptions.config.longOperation ? t.longMs : t.requestMs;
    const cancel = schedule(() => {
      cancels.delete(reply);
      if (reply.sent || reply.raw.headersSent || request.raw.destroyed) return;
      request.log.warn({ budgetMs: budget }, 'request timed out');
      reply.send(
        errors.timeout(
          `The request took longer than its time-out of ${Math.ceil(budget / 1000)} seconds and was stopped; retry later, or narrow it.`,
        ),
      );
    }, budget);
    cancels.set(reply, cancel);
  });
  app.addHook('onResponse', stop);
}
