import type { Database } from '@clinic/db';
import type { SecretBox } from '../../platform/secrets.ts';
import { allProviders, resealCredentials } from './queries.ts';
import { resealWebhookSecret, sealedWebhookSecrets } from '../webhooks/queries.ts';

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

/**
 * The same command re-seals the webhook signing secrets (they are sealed with the same master keys):
 * without this, dropping the old key from MASTER_KEYS would leave those subscriptions unable to sign.
 * Each value is swapped only if it is still the one read, so a rotation running meanwhile wins.
 */
export async function reencryptWebhookSecrets(db: Database, secrets: SecretBox): Promise<{ resealed: number; current: number }> {
  let resealed = 0;
  let current = 0;
  const rows = await sealedWebhookSecrets(db);
  for (const row of rows) {
    for (const column of ['secret_sealed', 'previous_secret_sealed'] as const) {
      const sealed = row[column];
      if (!sealed) continue;
      if (secrets.keyIdOf(sealed) === secrets.currentKeyId) {
        current++;
        continue;
      }
      if (await resealWebhookSecret(db, row.id, column, sealed, secrets.seal(secrets.open(sealed)))) resealed++;
    }
  }
  return { resealed, current };
}
