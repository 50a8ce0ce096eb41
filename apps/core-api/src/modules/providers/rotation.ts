import type { Database } from '@clinic/db';
import type { SecretBox } from '../../platform/secrets.ts';
import { allProviders, resealCredentials } from './queries.ts';

/**
 * `npm run cli -- providers re-encrypt`: after a new master key is put first in MASTER_KEYS, re-seals
 * every credential still under an older key, so that key can then be dropped. updated_at is left as it
 * is (the credentials did not change); a row changed meanwhile already carries the new key.
 */
export async function reencryptProviders(db: Database, secrets: SecretBox): Promise<{ resealed: number; current: number; keyId: string }> {
  let resealed = 0;
  let current = 0;
  for (const row of await allProviders(db)) {
    if (!row.credentials_sealed) continue;
    if (secrets.keyIdOf(row.credentials_sealed) === secrets.currentKeyId) {
      current++;
      continue;
    }
    const sealed = secrets.seal(secrets.open(row.credentials_sealed));
    if (await db.transaction((tx) => resealCredentials(tx, row.id, sealed, secrets.currentKeyId, row.updated_at))) resealed++;
  }
  return { resealed, current, keyId: secrets.currentKeyId };
}
