import type { SecretBox } from '../../platform/secrets.ts';
import { HINTED } from './schemas.ts';

export type Credentials = Record<string, string>;

/** JSON of the credential object, sealed with the current master key (AES-256-GCM, key id inside). */
export function sealCredentials(secrets: SecretBox, creds: Credentials): { sealed: string; keyId: string } {
  return { sealed: secrets.seal(JSON.stringify(creds)), keyId: secrets.currentKeyId };
}

export function openCredentials(secrets: SecretBox, sealed: string): Credentials {
  return JSON.parse(secrets.open(sealed)) as Credentials;
}

/** What responses and audit entries show: identifiers by their last four characters, secrets as set. */
export function maskCredentials(creds: Credentials | null): Record<string, string> | null {
  if (!creds) return null;
  return Object.fromEntries(Object.entries(creds).map(([k, v]) => [k, HINTED.has(k) && v.length > 8 ? `****${v.slice(-4)}` : '********']));
}

/** Removes every credential value from a text (provider error messages sometimes echo what they were sent). */
export function scrub(text: string, creds: Credentials): string {
  let out = text;
  for (const v of Object.values(creds)) if (v.length >= 4) out = out.split(v).join('[redacted]');
  return out.slice(0, 500);
}
