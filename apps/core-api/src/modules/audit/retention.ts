import { type Database, NIL_UUID } from '@clinic/db';
import type { SecretBox } from '../../platform/secrets.ts';
import type { WorkerRegistry } from '../../worker/types.ts';
import { chainStart, checkLink, walkStart } from './chain.ts';
import { CHECKPOINT_KEY_LABEL, signCheckpoint, type SigningKey } from './checkpoints.ts';
import { chainPage, chainsWithEntriesBefore, monthsBefore, pruneChainTo } from './queries.ts';

export interface AuditRetentionDeps {
  db: Database;
  secrets: SecretBox;
  /** AUDIT_RETENTION_MONTHS: entries older than this many calendar months go. */
  months: number;
  /** Entries removed per transaction (one checkpoint each); a chain with more is cut in several steps. */
  batchSize?: number;
}

export interface AuditRetentionResult {
  /** Entries removed, per chain (organization id, or `platform`). */
  removed: Record<string, number>;
  checkpoints: number;
  /** Chains left alone because their oldest entries do not verify: a cut would hide the break (see verifyChain). */
  refused: { chain: string; chain_seq: number; reason: string }[];
}

const BATCH = 5000;

/**
 * One cut of one chain, in one transaction: from where the chain starts (its latest valid checkpoint, or
 * the genesis), the entries created before `olderThan` are walked and verified as `audit verify` does;
 * the last of them is the cut. The checkpoint (signed here with the current master key) and the delete go
 * through app.audit_prune together. A chain whose head does not verify is not cut: the checkpoint would
 * vouch for entries nobody checked and turn a break into a clean start. Returns null when nothing is due.
 */
async function cutOnce(
  db: Database,
  keys: SigningKey[],
  chain: string,
  olderThan: Date,
  now: Date,
  batch: number,
): Promise<{ removed: number; more: boolean } | { refused: { chain_seq: number; reason: string } } | null> {
  return db.transaction(async (tx) => {
    const { start, broken } = await chainStart(tx, chain, keys);
    if (broken) return { refused: broken };
    let { seq: expectedSeq, prev } = walkStart(start);
    const rows = await chainPage(tx, chain !== NIL_UUID, chain, expectedSeq, batch);
    let cut: { seq: number; hash: string } | null = null;
    let young = false;
    for (const r of rows) {
      if (new Date(r.created_at).getTime() >= olderThan.getTime()) {
        young = true;
        break;
      }
      const b = checkLink(r, expectedSeq, prev, start);
      if (b) return { refused: b };
      cut = { seq: expectedSeq, hash: r.row_hash };
      prev = r.row_hash;
      expectedSeq++;
    }
    if (!cut) return null;
    const fields = { chain_id: chain, cut_seq: cut.seq, last_hash: cut.hash, older_than: olderThan, created_at: now };
    const removed = await pruneChainTo(tx, { ...fields, ...signCheckpoint(keys, fields) });
    return { removed, more: !young && rows.length === batch };
  });
}

/**
 * Spec 8 audit retention (`audit.retention` on the worker): every chain (each organization's and the
 * platform's) loses its entries older than `months` calendar months before `now`, each cut recorded by a
 * signed checkpoint so that `audit verify` still passes.
 */
export async function applyAuditRetention(deps: AuditRetentionDeps, now = new Date()): Promise<AuditRetentionResult> {
  const keys = deps.secrets.derivedKeys(CHECKPOINT_KEY_LABEL);
  const olderThan = await monthsBefore(deps.db, now, deps.months);
  const batch = deps.batchSize ?? BATCH;
  const result: AuditRetentionResult = { removed: {}, checkpoints: 0, refused: [] };
  for (const chain of await chainsWithEntriesBefore(deps.db, olderThan)) {
    const name = chain === NIL_UUID ? 'platform' : chain;
    for (;;) {
      const r = await cutOnce(deps.db, keys, chain, olderThan, now, batch);
      if (!r) break;
      if ('refused' in r) {
        result.refused.push({ chain: name, ...r.refused });
        break;
      }
      result.removed[name] = (result.removed[name] ?? 0) + r.removed;
      result.checkpoints++;
      if (!r.more) break;
    }
  }
  return result;
}

/** Registered by apps/core-api/src/worker/registry.ts. */
export function registerAuditJobs(registry: WorkerRegistry, deps: AuditRetentionDeps): void {
  registry.every('audit.retention', 3600, async ({ logger }) => {
    const r = await applyAuditRetention(deps);
    if (r.checkpoints) logger.info({ removed: r.removed, checkpoints: r.checkpoints }, 'audit retention applied');
    // A broken chain is a security incident (docs/operations.md): say so every hour until someone looks.
    for (const x of r.refused) logger.error(x, 'audit retention refused to cut a chain that does not verify');
  });
}
