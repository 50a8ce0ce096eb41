import { type AnchorHTMLAttributes, type MouseEvent, useSyncExternalStore } from 'react';

/*
 * A tiny history router for the apps' client-side routes (the clinic app's /clinic/...): the path is read
 * from location, changed with history.pushState, and every subscriber re-renders on a change or on the
 * browser's back and forward. Enough for a flat list of screens with path parameters; no nested layouts,
 * loaders or code splitting, which the apps do not need (decisions.md, "Clinic app router").
 */

const CHANGE = 'clinic:navigate';

function subscribe(onChange: () => void): () => void {
  window.addEventListener('popstate', onChange);
  window.addEventListener(CHANGE, onChange);
  return () => {
    window.removeEventListener('popstate', onChange);
    window.removeEventListener(CHANGE, onChange);
  };
}

/** The current path and query (`/clinic/calendar?view=week`), re-rendering on every navigation. */
export function useLocation(): { pathname: string; search: URLSearchParams } {
  const href = useSyncExternalStore(
    subscribe,
    () => `${location.pathname}${location.search}`,
    () => '/',
  );
  const at = href.indexOf('?');
  return { pathname: at === -1 ? href : href.slice(0, at), search: new URLSearchParams(at === -1 ? '' : href.slice(at + 1)) };
}

/** Goes to a path of this app without reloading the page (replace: no new history entry, e.g. a filter). */
export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  if (to === `${location.pathname}${location.search}`) return;
  if (opts.replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  window.dispatchEvent(new Event(CHANGE));
}

/**
 * The parameters of `path` when it matches `pattern` (segments, `:name` for a parameter), else null.
 * `/clinic/patients/:id` matches `/clinic/patients/42` as { id: '42' }; a trailing slash is ignored.
 */
export function matchPath(pattern: string, path: string): Record<string, string> | null {
  const split = (s: string) => s.replace(/\/+$/, '').split('/').filter(Boolean);
  const want = split(pattern);
  const have = split(path);
  if (want.length !== have.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    const h = have[i]!;
    if (w.startsWith(':')) params[w.slice(1)] = decodeURIComponent(h);
    else if (w !== h) return null;
  }
  return params;
}

/** A real link (open in a new tab works) that navigates in place on a plain click. */
export function Link({ to, onClick, ...rest }: { to: string } & Omit<AnchorHTMLAttributes<HTMLAnchorElement>, 'href'>) {
  const click = (e: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(e);
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(to);
  };
  return <a href={to} onClick={click} {...rest} />;
}
