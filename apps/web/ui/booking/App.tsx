import { api, I18nProvider, type Lang, Notice, readPageContext, rememberLanguage, Shell, translate } from '@clinic/ui';
import { useEffect, useState } from 'react';
import { Booker } from './Booker.tsx';

const ctx = readPageContext();

export function App() {
  const [lang, setLang] = useState<Lang>(ctx.language);
  useEffect(() => {
    document.documentElement.lang = lang;
    document.title = `${translate(lang, 'book.title')} · ${ctx.organization?.name ?? ''}`;
  }, [lang]);
  const onLanguage = (next: Lang) => {
    rememberLanguage(next);
    setLang(next);
    if (ctx.signedIn) void api.updateMe({ body: { preferred_language: next } }).catch(() => undefined);
  };
  return (
    <I18nProvider lang={lang}>
      <Shell ctx={ctx} current="book" onLanguage={onLanguage}>
        {ctx.organization ? (
          <Booker org={ctx.organization} email={ctx.user?.email ?? null} />
        ) : (
          <Notice kind="error">{translate(lang, 'app.noClinic')}</Notice>
        )}
      </Shell>
    </I18nProvider>
  );
}
