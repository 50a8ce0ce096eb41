import { useEffect, useState } from 'react';

/** The console's screens: /console/<screen>[/<id>], pushed into history so the back button and links work. */
export const SCREENS = ['organizations', 'providers', 'consents', 'health', 'audit'] as const;
export type Screen = (typeof SCREENS)[number];

export interface Route {
  screen: Screen;
  /** An organization's id on /console/organizations/<id>. */
  id: string | null;
}

export function parseRoute(path: string): Route {
  const [, , screen, id] = path.split('/');
  const s = (SCREENS as readonly string[]).includes(screen ?? '') ? (screen as Screen) : 'organizations';
  return { screen: s, id: s === 'organizations' && id ? decodeURIComponent(id) : null };
}

export function hrefOf(route: Partial<Route> & { screen: Screen }): string {
  return `/console/${route.screen}${route.id ? `/${encodeURIComponent(route.id)}` : ''}`;
}

export function navigate(href: string): void {
  history.pushState(null, '', href);
  window.dispatchEvent(new PopStateEvent('popstate'));
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.pathname));
  useEffect(() => {
    const on = () => setRoute(parseRoute(location.pathname));
    window.addEventListener('popstate', on);
    return () => window.removeEventListener('popstate', on);
  }, []);
  return route;
}

/** An in-app link: a real <a href> (new tab, copy link work) that navigates without a reload on a plain click. */
export function linkProps(href: string) {
  return {
    href,
    onClick: (e: { preventDefault(): void; metaKey: boolean; ctrlKey: boolean; shiftKey: boolean; button: number }) => {
      if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
      e.preventDefault();
      navigate(href);
    },
  };
}
