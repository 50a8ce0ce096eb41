// Which characters the bundled fonts can show, read from their cmap tables (engine-child.mjs). PDF/A
// forbids a character no font has (Typst refuses the document), so the engine replaces such characters
// with one the fonts do have before laying out. Plain JavaScript: the engine process runs it unloaded.

/** Code points of one TrueType/OpenType font's Unicode cmap (formats 4 and 12), as sorted [start, end] ranges. */
export function cmapRanges(font) {
  const u16 = (o) => font.readUInt16BE(o);
  const u32 = (o) => font.readUInt32BE(o);
  const tables = u16(4);
  let cmap = -1;
  for (let i = 0; i < tables; i++) {
    const rec = 12 + i * 16;
    if (font.toString('latin1', rec, rec + 4) === 'cmap') cmap = u32(rec + 8);
  }
  if (cmap < 0) return [];
  const subtables = [];
  for (let i = 0; i < u16(cmap + 2); i++) {
    const rec = cmap + 4 + i * 8;
    subtables.push({ platform: u16(rec), encoding: u16(rec + 2), offset: cmap + u32(rec + 4) });
  }
  const ranges = [];
  // Format 12 (full Unicode) when there is one, else format 4 (the Basic Multilingual Plane).
  const full = subtables.find((s) => u16(s.offset) === 12);
  if (full) {
    const groups = u32(full.offset + 12);
    for (let g = 0; g < groups; g++) {
      const o = full.offset + 16 + g * 12;
      ranges.push([u32(o), u32(o + 4)]);
    }
    return ranges;
  }
  const bmp = subtables.find((s) => u16(s.offset) === 4 && (s.platform === 3 || s.platform === 0));
  if (!bmp) return [];
  const o = bmp.offset;
  const segs = u16(o + 6) / 2;
  const ends = o + 14;
  const starts = ends + segs * 2 + 2;
  const deltas = starts + segs * 2;
  const rangeOffsets = deltas + segs * 2;
  for (let s = 0; s < segs; s++) {
    const end = u16(ends + s * 2);
    const start = u16(starts + s * 2);
    if (start === 0xffff) continue;
    const delta = u16(deltas + s * 2);
    const ro = u16(rangeOffsets + s * 2);
    // A code point maps to glyph 0 (.notdef) when its glyph id is 0: those are not covered.
    let runStart = -1;
    for (let c = start; c <= end + 1; c++) {
      let glyph = 0;
      if (c <= end) {
        if (ro === 0) glyph = (c + delta) & 0xffff;
        else {
          const at = rangeOffsets + s * 2 + ro + (c - start) * 2;
          const g = at + 1 < font.length ? u16(at) : 0;
          glyph = g === 0 ? 0 : (g + delta) & 0xffff;
        }
      }
      if (glyph !== 0 && runStart < 0) runStart = c;
      if (glyph === 0 && runStart >= 0) {
        ranges.push([runStart, c - 1]);
        runStart = -1;
      }
    }
  }
  return ranges;
}

// Characters that are never drawn but steer shaping or line breaking (zero-width space and joiners,
// bidirectional marks, variation selectors, tag characters): left as they are.
const INVISIBLE = [
  [0x200b, 0x200f],
  [0x2060, 0x2064],
  [0xfe00, 0xfe0f],
  [0xe0020, 0xe007f],
  [0xe0100, 0xe01ef],
];

/** A test of whether any of the fonts (Buffers) shows a code point. */
export function coverageOf(fonts) {
  const ranges = [...INVISIBLE, ...fonts.flatMap(cmapRanges)].sort((a, b) => a[0] - b[0]);
  const merged = [];
  for (const r of ranges) {
    const last = merged[merged.length - 1];
    if (last && r[0] <= last[1] + 1) last[1] = Math.max(last[1], r[1]);
    else merged.push([r[0], r[1]]);
  }
  return (cp) => {
    let lo = 0;
    let hi = merged.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (cp < merged[mid][0]) hi = mid - 1;
      else if (cp > merged[mid][1]) lo = mid + 1;
      else return true;
    }
    return false;
  };
}
