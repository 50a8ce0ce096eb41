import { createHash } from 'node:crypto';
import { NIL_UUID, type Queryable } from '@clinic/db';
import { chainHead, chainPage } from './queries.ts';

export interface ChainReport {
  chain: string;
  checked: number;
  ok: boolean;
  /** The first broken link: the row at that position and what is wrong with it. */
  broken?: { chain_seq: number; id: string | null; reason: string };
}

const PAGE = 2000;
const GENESIS = '0'.repeat(64);

/**
 * Walks one organization's chain (or the platform's, `null`) from the start, as the owner, and
 * recomputes every hash here rather than trusting the database's functions with the answer: each row
 * must sit at the next position, name the previous row's hash, and hash to what it stores. The head
 * must then match the last row, which catches rows cut off the end.
 */
export async function verifyChain(db: Queryable, orgId: string | null): Promise<ChainReport> {
  const chain = orgId ?? NIL_UUID;
  const report = (checked: number, broken?: ChainReport['broken']): ChainReport => ({
    chain: orgId ?? 'platform',
    checked,
    ok: !broken,
    ...(broken ? { broken } : {}),
  });
  let expectedSeq = 1;
  let prev = GENESIS;
  let checked = 0;
  for (;;) {
    const rows = await chainPage(db, orgId !== null, chain, expectedSeq, PAGE);
    for (const r of rows) {
      const seq = Number(r.chain_seq);
      if (seq !== expectedSeq)
        return report(checked, { chain_seq: expectedSeq, id: null, reason: `entry ${expectedSeq} is missing (next is ${seq})` });
      if (r.prev_hash !== prev) return report(checked, { chain_seq: seq, id: r.id, reason: 'prev_hash does not match the previous entry' });
      const hash = createHash('sha256')
        .update(r.prev_hash + r.canonical, 'utf8')
        .digest('hex');
      if (hash !== r.row_hash)
        return report(checked, { chain_seq: seq, id: r.id, reason: 'content does not match its hash (the entry was changed)' });
      prev = r.row_hash;
      expectedSeq++;
      checked++;
    }
    if (rows.length < PAGE) break;
  }
  const h = await chainHead(db, chain);
  if (h && (Number(h.last_seq) !== checked || h.last_hash !== prev)) {
    return report(checked, {
      chain_seq: checked + 1,
      id: null,
      reason: `the chain head says ${h.last_seq} entries; entries after ${checked} are missing`,
    });
  }
  return report(checked);
}
