import assert from 'node:assert/strict';
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { createLocalAssetStore, InvalidAssetKeyError, readAll } from '../src/index.ts';

describe('local asset store', async () => {
  const root = await mkdtemp(join(tmpdir(), 'assets-'));
  after(() => rm(root, { recursive: true, force: true }));
  const store = createLocalAssetStore(root);

  it('puts, heads, gets, lists and deletes; list hides metadata and is sorted', async () => {
    await store.put('squat/manifest.json', Buffer.from('{"a":1}'), { contentType: 'application/json' });
    await store.put('squat/audio/en/intro-vo-1.mp3', Readable.from([Buffer.from('abc')]));
    assert.deepEqual(await store.head('squat/manifest.json'), { size: 7, contentType: 'application/json' });
    assert.equal((await readAll((await store.get('squat/manifest.json'))!)).toString(), '{"a":1}');
    assert.deepEqual(await store.list('squat/'), ['squat/audio/en/intro-vo-1.mp3', 'squat/manifest.json']);
    assert.deepEqual(await store.list('nothing/'), []);
    await store.delete('squat/manifest.json');
    assert.equal(await store.get('squat/manifest.json'), null);
    assert.equal(await store.head('squat/manifest.json'), null);
    await store.delete('squat/manifest.json'); // missing: no error
  });

  it('lists a prefix from its own folder: partial names, nested folders, the whole store', async () => {
    await store.put('walk/a/one.mp4', Buffer.from('1'));
    await store.put('walk/a/b/two.mp4', Buffer.from('2'));
    await store.put('walk/ab.mp4', Buffer.from('3'));
    await store.put('other/x.mp4', Buffer.from('4'));
    assert.deepEqual(await store.list('walk/a/'), ['walk/a/b/two.mp4', 'walk/a/one.mp4']);
    assert.deepEqual(await store.list('walk/a'), ['walk/a/b/two.mp4', 'walk/a/one.mp4', 'walk/ab.mp4']);
    assert.deepEqual(await store.list('walk/a/o'), ['walk/a/one.mp4']);
    assert.deepEqual(await store.list('wal'), ['walk/a/b/two.mp4', 'walk/a/one.mp4', 'walk/ab.mp4']);
    assert.deepEqual(await store.list('walk/none/'), []);
    assert.ok((await store.list('')).includes('other/x.mp4'));
    // Proof that other folders are not walked: a dangling link there would make stat() throw.
    await symlink(join(root, 'missing-target'), join(root, 'other', 'dangling'));
    assert.deepEqual(await store.list('walk/a/o'), ['walk/a/one.mp4']);
    await rm(join(root, 'other', 'dangling'));
  });

  it('refuses keys that could leave the root', async () => {
    for (const bad of ['../x', 'a/../../x', '/etc/passwd', 'a//b', 'a/./b', 'sp ace', '']) {
      await assert.rejects(store.put(bad, Buffer.from('x')), InvalidAssetKeyError, bad);
    }
  });
});
