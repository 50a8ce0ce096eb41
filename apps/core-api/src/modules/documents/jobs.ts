import type { AssetStore } from '@clinic/assets';
import type { Database } from '@clinic/db';
import type { Logger } from 'pino';
import { type SweepDeps, sweepOrphanFiles } from '../../platform/file-store.ts';
import type { WorkerRegistry } from '../../worker/types.ts';
import { knownLogoKeys } from '../pdf-templates/queries.ts';
import { knownAssetKeys } from './queries.ts';
import { createPdfEngine } from './render/engine.ts';
import { type DocumentDeps, renderNow } from './service.ts';

export interface DocumentJobDeps {
  db: Database;
  assets: AssetStore;
  logger: Logger;
  maxPages: number;
  renderTimeoutMs: number;
  /** Engine processes; 0: one per core. */
  renderWorkers: number;
}

/** Renders one queued document as the owner of its organization's rows (the worker's side of renderNow). */
export function renderQueued(deps: Omit<DocumentDeps, 'urlKeys' | 'publicUrl' | 'limits'>, orgId: string, id: string) {
  const inTx = <T>(fn: Parameters<Database['withScope']>[1]) =>
    deps.db.withScope({ role: 'app_bypass', principalId: null, orgId, permissions: [] }, fn) as Promise<T>;
  return renderNow({ ...deps, urlKeys: [], publicUrl: '', limits: { inlineMaxRows: 0, urlTtlSeconds: 0 } }, inTx, orgId, id);
}

/** Objects of documents and letterhead logos that no row names (a render or upload cut short, an erasure's). */
export async function sweepOrphanDocumentFiles(deps: SweepDeps, now = Date.now()): Promise<string[]> {
  return [
    ...(await sweepOrphanFiles(deps, { segment: 'documents', known: knownAssetKeys }, now)),
    ...(await sweepOrphanFiles(deps, { segment: 'letterhead', known: knownLogoKeys }, now)),
  ];
}

/**
 * Long documents render here (the internal event document.render_requested, at least once: a document
 * already ready or failed is left as it is), on the worker's own engine processes; and the hourly sweep.
 */
export function registerDocumentJobs(registry: WorkerRegistry, deps: DocumentJobDeps): void {
  let engine: ReturnType<typeof createPdfEngine> | null = null;
  registry.onEvent('document.render_requested', async (event, ctx) => {
    engine ??= createPdfEngine({ maxPages: deps.maxPages, timeoutMs: deps.renderTimeoutMs, workers: deps.renderWorkers || undefined });
    const id = String(event.data.id);
    const d = await renderQueued({ db: deps.db, assets: deps.assets, logger: ctx.logger, engine }, event.organization_id!, id);
    ctx.logger.info({ document: id, status: d.status, pages: d.page_count }, 'document rendered');
  });
  registry.every('documents.orphan_files', 3600, () => sweepOrphanDocumentFiles(deps).then(() => undefined));
  registry.onClose(async () => {
    await engine?.close();
  });
}
