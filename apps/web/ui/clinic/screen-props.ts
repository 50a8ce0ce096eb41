import type { PageContext } from '@clinic/ui';

/** The signed-in member as GET /v1/me describes them, for screens that show or hide actions by permission code. */
export interface Member {
  id: string;
  email: string;
  permissions: readonly string[];
  preferredLanguage: string | null;
}

export interface ScreenProps {
  ctx: PageContext;
  me: Member;
  /** The route's `:params`. */
  params: Record<string, string>;
  /** Whether the member holds a permission code (the screens' one check for showing an action). */
  can: (code: string) => boolean;
}
