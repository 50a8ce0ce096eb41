import { readAll, type AssetStore } from '@clinic/assets';
import { errors } from '@clinic/http-kit';
import { Type, type Static } from 'typebox';
import Value from 'typebox/value';

/** The slots of spec 4.12; a rep slot is per side. */
export const SLOTS = ['intro', 'pauza', 'outro', 'rep-left', 'rep-right'] as const;
export type Slot = (typeof SLOTS)[number];

/** manifest.json of spec 2.12. Unknown keys are tolerated: the asset pipeline may add its own. */
export const Manifest = Type.Object({
  exercise: Type.String({ minLength: 1 }),
  reps_per_video_block: Type.Integer({ minimum: 1, maximum: 100 }),
  counts_per_audio_master: Type.Integer({ minimum: 1, maximum: 1000 }),
  sides: Type.Array(Type.Union([Type.Literal('left'), Type.Literal('right'), Type.Literal('bilateral')]), { minItems: 1 }),
  languages: Type.Array(Type.String({ pattern: '^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$' }), { minItems: 1 }),
});
export type Manifest = Static<typeof Manifest>;

/** What the asset store holds for one exercise: the manifest and the variant numbers per slot. */
export interface Inventory {
  manifest: Manifest;
  /** Video variants per slot, sorted ascending: `{slot}-video-{n}.mp4`. */
  video: Partial<Record<Slot, number[]>>;
  /** Voice-over variants per language and slot: `audio/{lang}/{slot}-vo-{n}.mp3`. */
  audio: Record<string, Partial<Record<Slot, number[]>>>;
}

export const videoKey = (slug: string, slot: Slot, n: number) => `${slug}/${slot}-video-${n}.mp4`;
export const audioKey = (slug: string, lang: string, slot: Slot, n: number) => `${slug}/audio/${lang}/${slot}-vo-${n}.mp3`;

const SLOT_RE = SLOTS.join('|');
const VIDEO = new RegExp(`^(${SLOT_RE})-video-([1-9][0-9]{0,3})\\.mp4$`);
const AUDIO = new RegExp(`^audio/([a-z]{2,3}(?:-[A-Za-z0-9]{2,8})*)/(${SLOT_RE})-vo-([1-9][0-9]{0,3})\\.mp3$`);

function add<K extends string>(into: Partial<Record<K, number[]>>, slot: K, n: number) {
  const list = into[slot] ?? [];
  list.push(n);
  into[slot] = list;
}

/**
 * Reads the manifest and discovers the variants from file names (spec 4.12: missing files only narrow
 * the pool). A missing or malformed manifest is the caller's validation error on `exercise`.
 */
export async function loadInventory(store: AssetStore, slug: string): Promise<Inventory> {
  const stream = await store.get(`${slug}/manifest.json`);
  if (!stream) throw errors.validation({ exercise: `the exercise has no manifest.json in the asset store` });
  let manifest: unknown;
  try {
    manifest = JSON.parse((await readAll(stream)).toString('utf8'));
  } catch {
    throw errors.validation({ exercise: 'manifest.json is not valid JSON' });
  }
  if (!Value.Check(Manifest, manifest)) {
    const first = [...Value.Errors(Manifest, manifest)][0];
    throw errors.validation({ exercise: `manifest.json is invalid: ${first?.instancePath || '/'} ${first?.message ?? ''}`.trim() });
  }
  if (manifest.exercise !== slug)
    throw errors.validation({ exercise: `manifest.json names exercise "${manifest.exercise}", not "${slug}"` });
  if (manifest.counts_per_audio_master % manifest.reps_per_video_block !== 0) {
    throw errors.validation({ exercise: 'manifest.json: counts_per_audio_master must be a multiple of reps_per_video_block' });
  }

  const inv: Inventory = { manifest, video: {}, audio: {} };
  for (const key of await store.list(`${slug}/`)) {
    const rel = key.slice(slug.length + 1);
    const v = VIDEO.exec(rel);
    if (v) {
      add(inv.video, v[1] as Slot, Number(v[2]));
      continue;
    }
    const a = AUDIO.exec(rel);
    if (a) {
      const lang = inv.audio[a[1]!] ?? {};
      inv.audio[a[1]!] = lang;
      add(lang, a[2] as Slot, Number(a[3]));
    }
  }
  for (const pool of [inv.video, ...Object.values(inv.audio)]) for (const list of Object.values(pool)) list.sort((x, y) => x - y);
  return inv;
}
