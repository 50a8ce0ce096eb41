import { pickLang } from './i18n/index.ts';
import type { Lang } from './format.ts';

/** What the proxy injects into every page (the `page-context` JSON block; see the web contract). */
export interface PageContext {
  organization: { id: string; slug: string; name: string; language_code: string } | null;
  language: Lang;
  signedIn: boolean;
  user: { email: string } | null;
  platformDomain: string;
}

/** Reads the page's context block; a page served without one (no clinic) gets an empty context. */
export function readPageContext(doc: Document = document): PageContext {
  let raw: Partial<PageContext> = {};
  try {
    raw = JSON.parse(doc.getElementById('page-context')?.textContent || '{}') as Partial<PageContext>;
  } catch {
    raw = {};
  }
  return {
    organization: raw.organization ?? null,
    language: pickLang(raw.language),
    signedIn: raw.signedIn === true,
    user: raw.user ?? null,
    platformDomain: raw.platformDomain ?? 'localhost',
  };
}
