import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Database } from '@clinic/db';
import type { SecretBox } from '../../platform/secrets.ts';
import { type CheckpointRow, insertResignedCheckpoint, latestCheckpoints } from './queries.ts';

/*
 * Audit checkpoints (migration 0110, docs/operations.md "Audit retention and checkpoints"): when the
 * retention sweep removes a chain's oldest entries, it records where the chain now starts, signed with
 * HMAC-SHA256 under a key derived from MASTER_KEYS (label below). The database never holds the key, so
 * whoever can write to it can delete entries or insert a checkpoint, but cannot make `audit verify` accept
 * either. Each checkpoint names the master key whose derived key signed it, so a rotation keeps older
 * checkpoints checkable while the retired key is still listed.
 */

/** The HKDF label of the checkpoint key (SecretBox.derivedKeys). */
export const CHECKPOINT_KEY_LABEL = 'audit-checkpoint';

export interface SigningKey {
  id: string;
  key: Buffer;
}

export type CheckpointFields = Pick<CheckpointRow, 'chain_id' | 'cut_seq' | 'last_hash' | 'older_than' | 'created_at'>;

/** The signed text: every field that says what was cut, one per line, with a version tag first. */
export function checkpointMessage(c: CheckpointFields): string {
  return [
    'clinic-audit-checkpoint/v1',
    c.chain_id,
    String(c.cut_seq),
    c.last_hash,
    new Date(c.older_than).toISOString(),
    new Date(c.created_at).toISOString(),
  ].join('\n');
}

const mac = (key: Buffer, c: CheckpointFields) => createHmac('sha256', key).update(checkpointMessage(c), 'utf8').digest();

/** Signs with the first (current) key. */
export function signCheckpoint(keys: SigningKey[], c: CheckpointFields): { key_id: string; signature: string } {
  const current = keys[0];
  if (!current) throw new Error('no master key to sign an audit checkpoint with');
  return { key_id: current.id, signature: mac(current.key, c).toString('hex') };
}

/**
 * `valid`: the key it names is listed and its signature matches (compared in constant time);
 * `forged`: the key is listed and the signature does not match its fields;
 * `unknown_key`: the key it names is not (or no longer) in MASTER_KEYS, so it cannot be checked.
 */
export function checkCheckpoint(keys: SigningKey[], c: CheckpointRow): 'valid' | 'forged' | 'unknown_key' {
  const key = keys.find((k) => k.id === c.key_id);
  if (!key) return 'unknown_key';
  const want = mac(key.key, c);
  const given = /^[0-9a-f]{64}$/.test(c.signature) ? Buffer.from(c.signature, 'hex') : Buffer.alloc(0);
  return given.length === want.length && timingSafeEqual(given, want) ? 'valid' : 'forged';
}

/** Where a chain starts: its latest valid checkpoint, the forged ones, and the latest one nobody can check. */
export function anchorOf(
  keys: SigningKey[],
  checkpoints: CheckpointRow[],
): { anchor: CheckpointRow | null; forged: CheckpointRow | null; unchecked: CheckpointRow | null } {
  let anchor: CheckpointRow | null = null;
  let forged: CheckpointRow | null = null;
  let unchecked: CheckpointRow | null = null;
  // Furthest cut first: the first valid one is the anchor; every one is checked, so a forgery anywhere shows.
  for (const c of checkpoints) {
    const v = checkCheckpoint(keys, c);
    if (v === 'forged') forged ??= c;
    else if (v === 'unknown_key') unchecked ??= c;
    else anchor ??= c;
  }
  return { anchor, forged, unchecked };
}

/**
 * Part of a master key rotation (`npm run cli -- providers re-encrypt`): each chain's latest checkpoint
 * still signed under an older key is signed again under the current one (a new row), after its old
 * signature is checked, so the old key can leave MASTER_KEYS without breaking `audit verify`. One that
 * does not verify is left as it is and counted: re-signing it would launder it.
 */
export async function resignCheckpoints(
  db: Database,
  secrets: SecretBox,
  now = new Date(),
): Promise<{ resigned: number; current: number; unchecked: number }> {
  const keys = secrets.derivedKeys(CHECKPOINT_KEY_LABEL);
  return db.transaction(async (tx) => {
    const out = { resigned: 0, current: 0, unchecked: 0 };
    for (const c of await latestCheckpoints(tx)) {
      const valid = checkCheckpoint(keys, c) === 'valid';
      if (valid && c.key_id === secrets.currentKeyId) out.current++;
      else if (!valid) out.unchecked++;
      else {
        const fields = { chain_id: c.chain_id, cut_seq: c.cut_seq, last_hash: c.last_hash, older_than: c.older_than, created_at: now };
        await insertResignedCheckpoint(tx, { ...fields, ...signCheckpoint(keys, fields) });
        out.resigned++;
      }
    }
    return out;
  });
}
