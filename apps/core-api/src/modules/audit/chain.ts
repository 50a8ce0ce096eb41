import { createHash } from 'node:crypto';
import { NIL_UUID, type Queryable } from '@clinic/db';
import { anchorOf, type SigningKey } from './checkpoints.ts';
import { type ChainLink, type CheckpointRow, chainCheckpoints, chainHead, chainPage } from './queries.ts';

export interface ChainReport {
  chain: string;
  checked: number;
  ok: boolean;
  /** The checkpoint the walk started from (entries up to cut_seq were removed by retention); absent: the genesis. */
  from?: { checkpoint_id: string; cut_seq: number; created_at: Date };
  /** The first broken link: the row at that position and what is wrong with it (a checkpoint's id when it is the checkpoint). */
  broken?: { chain_seq: number; id: string | null; reason: string };
}

export type Broken = NonNullable<ChainReport['broken']>;

const PAGE = 2000;
const GENESIS = '0'.repeat(64);

/** Where a walk begins: the first position after the checkpoint's cut (or 1) and the hash before it. */
export function walkStart(start: CheckpointRow | null): { seq: number; prev: string } {
  return start ? { seq: start.cut_seq + 1, prev: start.last_hash } : { seq: 1, prev: GENESIS };
}

/** Checks one entry against the position and hash before it; null when it links. */
export function checkLink(r: ChainLink, expectedSeq: number, prev: string, start: CheckpointRow | null): Broken | null {
  const seq = Number(r.chain_seq);
  if (seq !== expectedSeq) {
    const reason =
      expectedSeq === walkStart(start).seq
        ? start
          ? `entries ${expectedSeq} to ${seq - 1} are missing after the checkpoint at entry ${start.cut_seq}`
          : `entries 1 to ${seq - 1} are missing at the head of the chain and no valid checkpoint covers them`
        : `entry ${expectedSeq} is missing (next is ${seq})`;
    return { chain_seq: expectedSeq, id: null, reason };
  }
  if (r.prev_hash !== prev)
    return {
      chain_seq: seq,
      id: r.id,
      reason:
        start && seq === start.cut_seq + 1 ? 'prev_hash does not match the checkpoint' : 'prev_hash does not match the previous entry',
    };
  const hash = createHash('sha256')
    .update(r.prev_hash + r.canonical, 'utf8')
    .digest('hex');
  if (hash !== r.row_hash) return { chain_seq: seq, id: r.id, reason: 'content does not match its hash (the entry was changed)' };
  return null;
}

/**
 * Where a chain starts: its latest checkpoint whose signature verifies (entries up to its cut were removed
 * by retention), or the genesis. A checkpoint whose signature does not verify breaks the chain.
 */
export async function chainStart(
  db: Queryable,
  chain: string,
  keys: SigningKey[],
): Promise<{ start: CheckpointRow | null; broken?: Broken; note: string }> {
  const { anchor, forged, unchecked } = anchorOf(keys, await chainCheckpoints(db, chain));
  if (forged)
    return {
      start: anchor,
      note: '',
      broken: {
        chain_seq: forged.cut_seq,
        id: forged.id,
        reason: `checkpoint ${forged.id} (cut at entry ${forged.cut_seq}) does not verify: its fields or signature were changed, or it was forged`,
      },
    };
  const note =
    unchecked && (!anchor || unchecked.cut_seq > anchor.cut_seq)
      ? keys.length
        ? ` (checkpoint ${unchecked.id} is signed with master key "${unchecked.key_id}", which is not in MASTER_KEYS)`
        : ' (the checkpoints were not checked: no master keys given)'
      : '';
  return { start: anchor, note };
}

/**
 * Walks one organization's chain (or the platform's, `null`) as the owner, from its latest valid
 * checkpoint (or the genesis hash), and recomputes every hash here rather than trusting the database's
 * functions with the answer: each row must sit at the next position, name the previous row's hash (the
 * checkpoint's for the first), and hash to what it stores. The head must then match the last row, which
 * catches rows cut off the end. `keys` check the checkpoints' signatures (CHECKPOINT_KEY_LABEL).
 */
export async function verifyChain(db: Queryable, orgId: string | null, keys: SigningKey[] = []): Promise<ChainReport> {
  const chain = orgId ?? NIL_UUID;
  const { start, broken: forged, note } = await chainStart(db, chain, keys);
  const report = (checked: number, broken?: Broken): ChainReport => ({
    chain: orgId ?? 'platform',
    checked,
    ok: !broken,
    ...(start ? { from: { checkpoint_id: start.id, cut_seq: start.cut_seq, created_at: start.created_at } } : {}),
    ...(broken ? { broken: { ...broken, reason: broken.reason + note } } : {}),
  });
  if (forged) return report(0, forged);
  let { seq: expectedSeq, prev } = walkStart(start);
  let checked = 0;
  for (;;) {
    const rows = await chainPage(db, orgId !== null, chain, expectedSeq, PAGE);
    for (const r of rows) {
      const broken = checkLink(r, expectedSeq, prev, start);
      if (broken) return report(checked, broken);
      prev = r.row_hash;
      expectedSeq++;
      checked++;
    }
    if (rows.length < PAGE) break;
  }
  const h = await chainHead(db, chain);
  if (h && (Number(h.last_seq) !== expectedSeq - 1 || h.last_hash !== prev)) {
    return report(checked, {
      chain_seq: expectedSeq,
      id: null,
      reason:
        Number(h.last_seq) > expectedSeq - 1
          ? `the chain head says ${h.last_seq} entries; entries after ${expectedSeq - 1} are missing`
          : `the chain head says ${h.last_seq} entries, but the chain goes on to ${expectedSeq - 1}`,
    });
  }
  return report(checked);
}
