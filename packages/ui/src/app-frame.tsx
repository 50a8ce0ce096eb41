import { type ReactNode, useEffect, useState } from 'react';
import { api } from './api.ts';
import { type AppName, rememberLanguage, Shell } from './components.tsx';
import type { PageContext } from './context.ts';
import type { Lang } from './format.ts';
import { type MessageKey, translate } from './i18n/index.ts';
import { I18nProvider } from './i18n/react.tsx';

/**
 * What every app page is framed in: the shell (header, language switch) in the page's language, the
 * document's `lang` and title kept in step with it. A language switch is remembered in the `language`
 * cookie and, when signed in, as the person's preferred language, so it follows them to messages and
 * other devices.
 */
export function AppFrame({
  ctx,
  current,
  titleKey,
  nav,
  wide,
  children,
}: {
  ctx: PageContext;
  current: AppName;
  titleKey: MessageKey;
  /** The app's own navigation (given the language, so its labels follow a switch). */
  nav?: (lang: Lang) => ReactNode;
  wide?: boolean;
  children: (lang: Lang) => ReactNode;
}) {
  const [lang, setLang] = useState<Lang>(ctx.language);
  useEffect(() => {
    document.documentElement.lang = lang;
    document.title = `${translate(lang, titleKey)} · ${ctx.organization?.name ?? ''}`;
  }, [lang, titleKey, ctx.organization?.name]);
  const onLanguage = (next: Lang) => {
    rememberLanguage(next);
    setLang(next);
    if (ctx.signedIn) void api.updateMe({ body: { preferred_language: next } }).catch(() => undefined);
  };
  return (
    <I18nProvider lang={lang}>
      <Shell ctx={ctx} current={current} onLanguage={onLanguage} nav={nav?.(lang)} wide={wide}>
        {children(lang)}
      </Shell>
    </I18nProvider>
  );
}
