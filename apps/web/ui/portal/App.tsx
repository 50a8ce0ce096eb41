import { api, I18nProvider, type Lang, readPageContext, rememberLanguage, Shell, translate } from '@clinic/ui';
import { useEffect, useState } from 'react';
import { Portal } from './Portal.tsx';

const ctx = readPageContext();

export function App() {
  const [lang, setLang] = useState<Lang>(ctx.language);
  useEffect(() => {
    document.documentElement.lang = lang;
    document.title = `${translate(lang, 'portal.title')} · ${ctx.organization?.name ?? ''}`;
  }, [lang]);
  const onLanguage = (next: Lang) => {
    rememberLanguage(next);
    setLang(next);
    // The patient's preferred language follows them to messages and other devices.
    if (ctx.signedIn) void api.updateMe({ body: { preferred_language: next } }).catch(() => undefined);
  };
  return (
    <I18nProvider lang={lang}>
      <Shell ctx={ctx} current="portal" onLanguage={onLanguage}>
        <Portal ctx={ctx} />
      </Shell>
    </I18nProvider>
  );
}
