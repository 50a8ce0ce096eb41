import type { Database } from '@clinic/db';
import type { Logger } from 'pino';
import type { Config } from '../../config.ts';
import type { SecretBox } from '../../platform/secrets.ts';
import type { WorkerRegistry } from '../../worker/types.ts';
import { latestPublished } from '../custom-fields/queries.ts';
import { createChannels } from '../messages/channels.ts';
import { createProviderResolver } from '../providers/resolver.ts';
import { compileCriteria, CriteriaError } from '../segments/criteria.ts';
import { processRunJobs, type RunJob } from './engine.ts';
import * as rq from './runs-queries.ts';

/** The queue of automation runs: one job per run (and per later attempt of it). */
export const RUN_QUEUE = 'automation-run';

export interface AutomationJobDeps {
  db: Database;
  secrets: SecretBox;
  logger: Logger;
  config: Pick<Config, 'messages' | 'automations' | 'providers' | 'publicUrl'>;
}

/**
 * Automations on the worker: the run queue and its channels, and the outbox step that makes runs (from the
 * pass's events at once; from appointment offsets, schedules and stale runs every AUTOMATIONS_SWEEP_SECONDS)
 * and their jobs in the pass's transaction, so a run exists if and only if its job does.
 */
export function registerAutomationJobs(registry: WorkerRegistry, deps: AutomationJobDeps): void {
  const { config } = deps;
  const resolver = createProviderResolver({ db: deps.db, secrets: deps.secrets, ttlMs: config.providers.cacheTtlSeconds * 1000 });
  const host = new URL(config.publicUrl).hostname;
  const channels = createChannels({
    resolver,
    outboxDir: config.messages.outboxDir,
    defaultFrom: config.messages.from,
    host,
    allowPrivate: config.providers.allowPrivateEndpoints,
    timeoutMs: config.messages.timeoutMs,
    maxConnections: config.messages.smtpConnections,
    logger: deps.logger,
  });
  registry.onClose(() => channels.close());
  const leaseSeconds = Math.ceil(config.messages.timeoutMs / 1000) * 2 + 10;

  registry.queue<RunJob>(
    RUN_QUEUE,
    {
      retryLimit: 10,
      retryDelay: 5,
      retryBackoff: true,
      // A worker that dies mid-batch: its jobs come back after this, and by then their claims have run out.
      expireInSeconds: leaseSeconds + 5,
      batchSize: config.automations.batchSize,
      pollingIntervalSeconds: 0.5,
    },
    (jobs, ctx) =>
      processRunJobs(
        {
          db: deps.db,
          channels,
          logger: ctx.logger,
          host,
          retryScheduleSeconds: config.messages.retryScheduleSeconds,
          leaseSeconds,
          concurrency: Math.max(4, config.messages.smtpConnections * 2),
          enqueue: ctx.enqueue,
        },
        jobs,
      ),
  );

  let lastSweep = 0;
  registry.fanOut(async (tx, events, { limit }) => {
    const made = await rq.runsForEvents(tx, events);
    if (Date.now() - lastSweep >= config.automations.sweepSeconds * 1000) {
      lastSweep = Date.now();
      made.push(...(await rq.dueAppointmentRuns(tx)));
      for (const rule of await rq.dueScheduleRules(tx)) {
        const criteria = await rq.segmentCriteria(tx, rule.organization_id, rule.segment_id);
        if (criteria === null) continue;
        try {
          const custom = await latestPublished(tx, rule.organization_id, { entityType: 'patient' });
          const compiled = compileCriteria(criteria, custom, 5);
          made.push(...(await rq.scheduledRuns(tx, rule, rule.local_date, compiled)));
        } catch (err) {
          // A segment whose criteria no longer compile (a custom field was deleted): nothing fires; say so.
          if (!(err instanceof CriteriaError)) throw err;
          deps.logger.warn(
            { rule_id: rule.id, segment_id: rule.segment_id, fields: err.fields },
            'scheduled rule skipped: its segment does not compile',
          );
        }
      }
      made.push(...(await rq.staleRuns(tx, limit)));
    }
    return made.map((r) => ({ name: RUN_QUEUE, data: { organization_id: r.organization_id, run_id: r.id } satisfies RunJob }));
  });
}
