import type { Lang } from '../format.ts';
import { en, type MessageKey } from './en.ts';
import { ro } from './ro.ts';

export type { MessageKey };
export const messages: Record<Lang, Record<MessageKey, string>> = { en, ro };
export const languages: readonly Lang[] = ['en', 'ro'];

/** en or ro from any tag (ro-RO -> ro); anything else is en, as the front-ends render only these two. */
export function pickLang(tag: string | null | undefined): Lang {
  const base = (tag ?? '').toLowerCase().split('-')[0];
  return base === 'ro' ? 'ro' : 'en';
}

/** The message of `key` in `lang` with `{name}` placeholders filled. */
export function translate(lang: Lang, key: MessageKey, vars?: Record<string, string | number>): string {
  const text = messages[lang][key] ?? en[key];
  return vars ? text.replace(/\{(\w+)\}/g, (m, name: string) => (name in vars ? String(vars[name]) : m)) : text;
}

/** A consent purpose's name in the page's language when the front-ends know it, else the name the API gives. */
export function purposeName(lang: Lang, code: string, fallback: string | undefined): string {
  const key = `purpose.${code}` as MessageKey;
  return key in en ? translate(lang, key) : (fallback ?? code);
}
