import { AuthControl, I18nProvider, LanguageSwitch, type Lang, readPageContext, rememberLanguage, translate, useI18n } from '@clinic/ui';
import { type ReactNode, useEffect, useRef, useState } from 'react';
import { AuditChain } from './audit/AuditChain.tsx';
import { Consents } from './consents/Consents.tsx';
import { Health } from './health/Health.tsx';
import { OrganizationDetails } from './organizations/OrganizationDetails.tsx';
import { Organizations } from './organizations/Organizations.tsx';
import { Providers } from './providers/Providers.tsx';
import { Refused } from './Refused.tsx';
import { hrefOf, linkProps, type Screen, SCREENS, useRoute } from './router.ts';

const ctx = readPageContext();
/** The proxy's verdict from GET /v1/me (console.ts): a person who is not a superadmin gets the refusal. */
const access: 'granted' | 'refused' = (() => {
  try {
    const raw = JSON.parse(document.getElementById('page-context')?.textContent || '{}') as { console?: { access?: string } };
    return raw.console?.access === 'granted' ? 'granted' : 'refused';
  } catch {
    return 'refused';
  }
})();

const TITLES: Record<Screen, Parameters<typeof translate>[1]> = {
  organizations: 'console.nav.organizations',
  providers: 'console.nav.providers',
  consents: 'console.nav.consents',
  health: 'console.nav.health',
  audit: 'console.nav.audit',
};

export function App() {
  const [lang, setLang] = useState<Lang>(ctx.language);
  const route = useRoute();
  useEffect(() => {
    document.documentElement.lang = lang;
    document.title = `${translate(lang, access === 'granted' ? TITLES[route.screen] : 'console.refused.title')} · ${translate(lang, 'console.brand')}`;
  }, [lang, route.screen]);
  const onLanguage = (next: Lang) => {
    rememberLanguage(next);
    setLang(next);
  };
  return (
    <I18nProvider lang={lang}>
      <Frame onLanguage={onLanguage} current={access === 'granted' ? route.screen : null}>
        {access === 'refused' ? (
          <Refused />
        ) : route.screen === 'organizations' && route.id ? (
          <OrganizationDetails key={route.id} orgId={route.id} />
        ) : route.screen === 'organizations' ? (
          <Organizations />
        ) : route.screen === 'providers' ? (
          <Providers />
        ) : route.screen === 'consents' ? (
          <Consents />
        ) : route.screen === 'health' ? (
          <Health />
        ) : (
          <AuditChain />
        )}
      </Frame>
    </I18nProvider>
  );
}

function Frame({ current, onLanguage, children }: { current: Screen | null; onLanguage: (l: Lang) => void; children: ReactNode }) {
  const { t } = useI18n();
  const main = useRef<HTMLElement>(null);
  // A new screen moves focus to its content, so a keyboard or screen-reader user lands where the change is.
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    main.current?.focus();
  }, [current]);
  return (
    <div className="console-layout">
      <a className="skip-link" href="#main">
        {t('app.skip')}
      </a>
      <header className="console-top">
        <a className="console-brand" {...linkProps('/console/organizations')}>
          <span className="console-mark" aria-hidden="true">
            ◆
          </span>
          <span>{t('console.brand')}</span>
          <span className="console-env">{t('console.operator')}</span>
        </a>
        <div className="header-actions">
          <LanguageSwitch onChange={onLanguage} />
          <AuthControl ctx={ctx} returnTo="/console" />
        </div>
      </header>
      <div className="console-body">
        {current && (
          <nav className="console-nav" aria-label={t('console.nav.label')}>
            <ul>
              {SCREENS.map((s) => (
                <li key={s}>
                  <a {...linkProps(hrefOf({ screen: s }))} aria-current={current === s ? 'page' : undefined}>
                    <span className={`nav-icon nav-icon-${s}`} aria-hidden="true" />
                    {t(TITLES[s])}
                  </a>
                </li>
              ))}
            </ul>
          </nav>
        )}
        <main id="main" ref={main} className="console-main" tabIndex={-1}>
          {children}
        </main>
      </div>
    </div>
  );
}
