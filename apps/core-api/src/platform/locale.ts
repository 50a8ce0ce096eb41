/** A BCP 47 language tag in its canonical form (`en-gb` -> `en-GB`), or null when it is not one. */
export function canonicalLanguage(tag: string): string | null {
  try {
    return Intl.getCanonicalLocales(tag.trim())[0] ?? null;
  } catch {
    return null;
  }
}
