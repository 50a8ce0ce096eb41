import type { MessageKey } from '@clinic/ui';
import type { ComponentType } from 'react';
import type { Area, Gate } from './access.ts';
import { CalendarScreen } from './calendar/CalendarScreen.tsx';
import { patientScreens } from './patients/index.ts';
import type { ScreenProps } from './screen-props.ts';

/**
 * The clinic app's screens: one line each. `path` may hold `:params`; `anyOf` lists the permission codes of
 * which the caller needs one; `nav: false` keeps a detail screen out of the navigation. A screen not built
 * yet is simply not here (no placeholder pages); an area with no screen the caller may open is not shown.
 */
export interface Screen extends Gate {
  path: string;
  area: Area;
  titleKey: MessageKey;
  component: ComponentType<ScreenProps>;
  nav?: boolean;
}

export const screens: readonly Screen[] = [
  {
    path: '/clinic/calendar',
    area: 'calendar',
    titleKey: 'clinic.area.calendar',
    anyOf: ['appointments.view_org', 'appointments.view_own'],
    component: CalendarScreen,
  },
  ...patientScreens,
];
