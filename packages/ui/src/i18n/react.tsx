import { createContext, type ReactNode, useContext, useMemo } from 'react';
import type { Lang } from '../format.ts';
import { type MessageKey, translate } from './index.ts';

interface I18n {
  lang: Lang;
  t: (key: MessageKey, vars?: Record<string, string | number>) => string;
}

const Ctx = createContext<I18n>({ lang: 'en', t: (k, v) => translate('en', k, v) });

export function I18nProvider({ lang, children }: { lang: Lang; children: ReactNode }) {
  const value = useMemo<I18n>(() => ({ lang, t: (k, v) => translate(lang, k, v) }), [lang]);
  return <Ctx.Provider value={value}>{children}</Ctx.Provider>;
}

export function useI18n(): I18n {
  return useContext(Ctx);
}
