import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { createSecretBox, parseMasterKeys, SecretKeyError } from '../src/platform/secrets.ts';

const key = () => randomBytes(32).toString('base64');

describe('secrets at rest (AES-256-GCM under MASTER_KEYS)', () => {
  it('seals with the first key and opens what it sealed; the ciphertext carries no plaintext', () => {
    const box = createSecretBox(parseMasterKeys(`k1:${key()}`));
    const sealed = box.seal('whsec_super-secret');
    assert.equal(box.keyIdOf(sealed), 'k1');
    assert.ok(!sealed.includes('super-secret'));
    assert.notEqual(box.seal('whsec_super-secret'), sealed, 'a fresh IV each time');
    assert.equal(box.open(sealed), 'whsec_super-secret');
  });

  it('rotation: a new first key seals, old ciphertexts still open while the old key is listed', () => {
    const k1 = key();
    const old = createSecretBox(parseMasterKeys(`k1:${k1}`)).seal('s1');
    const rotated = createSecretBox(parseMasterKeys(`k2:${key()},k1:${k1}`));
    assert.equal(rotated.open(old), 's1');
    assert.equal(rotated.keyIdOf(rotated.seal('s2')), 'k2');
    const dropped = createSecretBox(parseMasterKeys(`k2:${key()}`));
    assert.throws(() => dropped.open(old), /master key "k1"/);
  });

  it('a changed byte, or a key id swapped into the header, fails to open', () => {
    const same = key();
    const box = createSecretBox(parseMasterKeys(`a:${same},b:${same}`));
    const sealed = box.seal('secret');
    const p = sealed.split('.');
    const ct = Buffer.from(p[4]!, 'base64url');
    ct[0]! ^= 1;
    assert.throws(() => box.open([...p.slice(0, 4), ct.toString('base64url')].join('.')));
    assert.throws(() => box.open(['v1', 'b', ...p.slice(2)].join('.')), 'the key id is authenticated');
  });

  it('refuses malformed MASTER_KEYS with a message that says what to do', () => {
    assert.throws(
      () => parseMasterKeys('k1:short'),
      (e: Error) => e instanceof SecretKeyError && /32 bytes/.test(e.message),
    );
    assert.throws(() => parseMasterKeys(`bad id:${key()}`), SecretKeyError);
    assert.throws(() => parseMasterKeys(`k:${key()},k:${key()}`), /repeats/);
    assert.throws(() => parseMasterKeys(''), /empty/);
  });
});
