import type { ReactNode } from 'react';
import type { PageContext } from './context.ts';
import type { Lang } from './format.ts';
import { languages } from './i18n/index.ts';
import { useI18n } from './i18n/react.tsx';

/** Sets the `language` cookie the proxy reads (readable by scripts by design) for a year. */
export function rememberLanguage(lang: Lang): void {
  const secure = location.protocol === 'https:' ? '; Secure' : '';
  document.cookie = `language=${lang}; Path=/; Max-Age=31536000; SameSite=Lax${secure}`;
  document.documentElement.lang = lang;
}

export function LanguageSwitch({ onChange }: { onChange: (lang: Lang) => void }) {
  const { lang, t } = useI18n();
  return (
    <label className="lang-switch">
      <span className="visually-hidden">{t('lang.label')}</span>
      <select value={lang} onChange={(e) => onChange(e.target.value as Lang)} aria-label={t('lang.label')}>
        {languages.map((l) => (
          <option key={l} value={l} lang={l}>
            {t(`lang.${l}`)}
          </option>
        ))}
      </select>
    </label>
  );
}

/** The sign-in link (the proxy runs the OpenID flow) or the sign-out form (a plain POST, works without scripts). */
export function AuthControl({ ctx, returnTo }: { ctx: PageContext; returnTo: string }) {
  const { t } = useI18n();
  if (!ctx.signedIn)
    return (
      <a className="button button-secondary" href={`/auth/login?return_to=${encodeURIComponent(returnTo)}`}>
        {t('auth.signIn')}
      </a>
    );
  return (
    <form method="post" action="/auth/logout" className="auth-form">
      {ctx.user?.email && <span className="muted small user-email">{t('auth.signedInAs', { email: ctx.user.email })}</span>}
      <button type="submit" className="button button-secondary">
        {t('auth.signOut')}
      </button>
    </form>
  );
}

/** The apps a page can belong to: the public pair share one navigation, the clinic app brings its own. */
export type AppName = 'book' | 'portal' | 'clinic';

export function Shell({
  ctx,
  current,
  onLanguage,
  nav,
  wide,
  children,
}: {
  ctx: PageContext;
  current: AppName;
  onLanguage: (lang: Lang) => void;
  /** The app's own navigation in place of the booking page and portal links. */
  nav?: ReactNode;
  /** Full-width content (the clinic app's calendar), instead of the reading-width column. */
  wide?: boolean;
  children: ReactNode;
}) {
  const { t } = useI18n();
  const name = ctx.organization?.name ?? '';
  const container = wide ? 'container container-wide' : 'container';
  return (
    <>
      <a className="skip-link" href="#main">
        {t('app.skip')}
      </a>
      <header className="site-header">
        <div className={`${container} header-row`}>
          <a className="brand" href={current === 'clinic' ? '/clinic' : '/'}>
            <span className="brand-mark" aria-hidden="true">
              {name.slice(0, 1).toUpperCase() || '+'}
            </span>
            <span className="brand-name">{name}</span>
          </a>
          {nav ?? (
            <nav className="header-nav" aria-label={t('portal.tabs')}>
              <a href="/" aria-current={current === 'book' ? 'page' : undefined}>
                {t('nav.book')}
              </a>
              <a href="/portal" aria-current={current === 'portal' ? 'page' : undefined}>
                {t('nav.portal')}
              </a>
            </nav>
          )}
          <div className="header-actions">
            <LanguageSwitch onChange={onLanguage} />
            <AuthControl ctx={ctx} returnTo={location.pathname} />
          </div>
        </div>
      </header>
      <main id="main" className={`${container} main`} tabIndex={-1}>
        {children}
      </main>
      <footer className="site-footer">
        <div className={`${container} muted small`}>{name}</div>
      </footer>
    </>
  );
}

export function Spinner({ label }: { label?: string }) {
  const { t } = useI18n();
  return (
    <p className="loading" role="status">
      <span className="spinner" aria-hidden="true" />
      {label ?? t('app.loading')}
    </p>
  );
}

export function Notice({ kind = 'info', children }: { kind?: 'info' | 'error' | 'success' | 'warning'; children: ReactNode }) {
  return (
    <div className={`notice notice-${kind}`} role={kind === 'error' ? 'alert' : 'status'}>
      {children}
    </div>
  );
}
