import type { Database } from '@clinic/db';
import type { WorkerRegistry } from '../../worker/types.ts';
import { EVALUATE_EVENT, runEvaluation } from './service.ts';

/** Large segment evaluations (POST /v1/segments/{id}/evaluate answered 202) run on the worker. */
export function registerSegmentJobs(registry: WorkerRegistry, deps: { db: Database; chunkSize: number }): void {
  registry.onEvent(EVALUATE_EVENT, async (event) => {
    const { evaluation_id } = event.data as { evaluation_id?: string };
    if (event.organization_id && evaluation_id) await runEvaluation(deps.db, event.organization_id, evaluation_id, deps.chunkSize);
  });
}
