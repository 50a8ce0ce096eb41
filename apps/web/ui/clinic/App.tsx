import {
  AppFrame,
  api,
  errorCode,
  I18nProvider,
  Link,
  matchPath,
  navigate,
  Notice,
  pickLang,
  readPageContext,
  Spinner,
  useI18n,
  useLocation,
} from '@clinic/ui';
import { useQuery } from '@tanstack/react-query';
import { type ReactNode, useEffect } from 'react';
import { allowed, navEntries } from './access.ts';
import type { Member } from './screen-props.ts';
import { type Screen, screens } from './screens.tsx';

const ctx = readPageContext();

/** The screen at `pathname` and its parameters, whether or not the caller may open it. */
function route(pathname: string): { screen: Screen; params: Record<string, string> } | null {
  for (const screen of screens) {
    const params = matchPath(screen.path, pathname);
    if (params) return { screen, params };
  }
  return null;
}

function ClinicNav({ entries, current }: { entries: ReturnType<typeof navEntries>; current: string | undefined }) {
  const { t } = useI18n();
  if (!entries.length) return null;
  return (
    <nav className="header-nav clinic-nav" aria-label={t('clinic.nav')}>
      {entries.map((e) => (
        <Link key={e.area} to={e.path} aria-current={e.area === current ? 'page' : undefined}>
          {t(e.key)}
        </Link>
      ))}
    </nav>
  );
}

function Message({ title, body, children }: { title: string; body: string; children?: ReactNode }) {
  return (
    <section className="clinic-message card" aria-labelledby="clinic-message-title">
      <h1 id="clinic-message-title">{title}</h1>
      <p>{body}</p>
      {children}
    </section>
  );
}

/** Staff access iff a membership at this clinic (spec 5 rules 6-7); everyone else gets this page, not a screen. */
function NoAccess({ email }: { email: string }) {
  const { t } = useI18n();
  return (
    <Message title={t('clinic.noAccess.title')} body={t('clinic.noAccess.body', { email, clinic: ctx.organization?.name ?? '' })}>
      <p>
        <a href="/portal">{t('clinic.noAccess.portal')}</a>
      </p>
    </Message>
  );
}

export function App() {
  const { pathname } = useLocation();
  const me = useQuery({ queryKey: ['me'], queryFn: async () => (await api.getMe()).data.data });
  const unauthorized = me.isError && errorCode(me.error) === 'unauthorized';
  useEffect(() => {
    // The session ended (expired or signed out elsewhere): sign in again and come back here.
    if (unauthorized) location.assign(`/auth/login?return_to=${encodeURIComponent(location.pathname + location.search)}`);
  }, [unauthorized]);

  const data = me.data;
  const permissions = data?.current_permissions ?? [];
  const staff = data?.is_staff_at_current_org === true;
  const visible = screens.filter((s) => allowed(s, permissions));
  const entries = staff ? navEntries(screens, permissions) : [];
  const found = route(pathname);
  const home = visible[0]?.path;
  const atRoot = matchPath('/clinic', pathname) !== null;
  useEffect(() => {
    // /clinic opens the first screen the member may use.
    if (staff && atRoot && home) navigate(home, { replace: true });
  }, [staff, atRoot, home]);

  if (me.isPending || unauthorized) {
    return (
      <I18nProvider lang={ctx.language}>
        <main className="container main">
          <Spinner />
        </main>
      </I18nProvider>
    );
  }
  // The member's own language first (GET /v1/me), then the page's (cookie or the clinic's language).
  const lang = data?.preferred_language ? pickLang(data.preferred_language) : ctx.language;
  const member: Member | null = data ? { id: data.id, email: data.email, permissions, preferredLanguage: data.preferred_language } : null;
  const open = found && staff && allowed(found.screen, permissions) ? found : null;
  return (
    <AppFrame
      ctx={{ ...ctx, language: lang }}
      current="clinic"
      titleKey={open?.screen.titleKey ?? 'clinic.title'}
      wide
      nav={() => <ClinicNav entries={entries} current={open?.screen.area} />}
    >
      {() => <Body failed={me.isError} member={member} staff={staff} open={open} home={home} atRoot={atRoot} />}
    </AppFrame>
  );
}

function Body({
  failed,
  member,
  staff,
  open,
  home,
  atRoot,
}: {
  failed: boolean;
  member: Member | null;
  staff: boolean;
  open: { screen: Screen; params: Record<string, string> } | null;
  home: string | undefined;
  atRoot: boolean;
}) {
  const { t } = useI18n();
  if (failed || !member) return <Notice kind="error">{t('app.error')}</Notice>;
  if (!staff) return <NoAccess email={member.email} />;
  if (open) {
    const Screen = open.screen.component;
    return <Screen ctx={ctx} me={member} params={open.params} can={(code) => member.permissions.includes(code)} />;
  }
  if (!home) return <Message title={t('clinic.nothing.title')} body={t('clinic.nothing.body', { clinic: ctx.organization?.name ?? '' })} />;
  if (atRoot) return <Spinner />;
  return (
    <Message title={t('clinic.notFound.title')} body={t('clinic.notFound.body')}>
      <p>
        <Link to={home}>{t('clinic.notFound.home')}</Link>
      </p>
    </Message>
  );
}
