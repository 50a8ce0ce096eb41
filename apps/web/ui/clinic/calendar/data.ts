import type { ResponseOf } from '@clinic/client';
import { api } from '@clinic/ui';
import { useQueries, useQuery } from '@tanstack/react-query';
import type { GridWindow } from './CalendarGrid.tsx';
import type { Resource } from '@clinic/ui';

export type Appointment = ResponseOf<'listAppointments'>['data'][number];
export type Location = ResponseOf<'listLocations'>['data'][number];
export type Specialist = ResponseOf<'listSpecialists'>['data'][number];
export type CalendarRow = ResponseOf<'listCalendars'>['data'][number];
export type Service = ResponseOf<'listServices'>['data'][number];

/** How often the calendar asks again, so another member's booking shows up (decisions.md: polling). */
export const LIVE_SECONDS = 15;

/** What the calendar shows: everything but the superseded rows of a move. */
const SHOWN = 'scheduled,confirmed,checked_in,in_progress,done,no_show,cancelled';

export function useDirectory(orgId: string) {
  const locations = useQuery({
    queryKey: ['cal', 'locations', orgId],
    queryFn: async () => (await api.listLocations({ params: { id: orgId }, query: { limit: '500', sort: 'name' } })).data.data,
  });
  const specialists = useQuery({
    queryKey: ['cal', 'specialists'],
    queryFn: async () => (await api.listSpecialists({ query: { limit: '500' } })).data.data,
  });
  const calendars = useQuery({
    queryKey: ['cal', 'calendars'],
    queryFn: async () => (await api.listCalendars({ query: { limit: '500', sort: 'name' } })).data.data,
  });
  const services = useQuery({
    queryKey: ['cal', 'services'],
    queryFn: async () => (await api.listServices({ query: { limit: '500' } })).data.data,
  });
  return { locations, specialists, calendars, services };
}

/** Every appointment starting in [from, to) at a location, all pages, asked again every LIVE_SECONDS. */
export function useAppointments(from: Date, to: Date, locationId: string | null) {
  return useQuery({
    queryKey: ['cal', 'appointments', from.toISOString(), to.toISOString(), locationId],
    refetchInterval: LIVE_SECONDS * 1000,
    placeholderData: (previous) => previous,
    queryFn: async () => {
      const out: Appointment[] = [];
      for (let page = 1; page < 100; page++) {
        const res = (
          await api.listAppointments({
            query: {
              starts_at_after: from.toISOString(),
              starts_at_before: new Date(to.getTime() - 1).toISOString(),
              status: SHOWN,
              sort: 'starts_at',
              limit: '500',
              page: String(page),
              ...(locationId ? { location_id: locationId } : {}),
            },
          })
        ).data;
        out.push(...res.data);
        if (out.length >= res.pagination.total || res.data.length === 0) break;
      }
      return out;
    },
  });
}

/** The open windows (rules plus extra hours minus time off, as instants) of each column's resource. */
export function useWindows(resources: readonly Resource[], fromDate: string, toDate: string, locationId: string | null): GridWindow[] {
  const results = useQueries({
    queries: resources.map((r) => ({
      queryKey: ['cal', 'windows', r.id, fromDate, toDate],
      staleTime: 60_000,
      queryFn: async () => {
        const query = { from: fromDate, to: toDate };
        const body = r.specialistId
          ? (await api.getSpecialistAvailability({ params: { id: r.specialistId }, query })).data.data
          : (await api.getCalendarAvailability({ params: { id: r.id }, query })).data.data;
        return (body.windows ?? [])
          .filter((w) => !locationId || w.location_id === locationId)
          .map((w) => ({ resourceId: r.specialistId ?? r.id, start: w.start, end: w.end }));
      },
    })),
  });
  return results.flatMap((q) => q.data ?? []);
}

/** The names of the patients of these appointments (the picker by ids, 50 at a time). */
export function usePatientNames(ids: readonly string[]) {
  const unique = [...new Set(ids)].sort();
  return useQuery({
    queryKey: ['cal', 'patient-names', unique.join(',')],
    enabled: unique.length > 0,
    staleTime: 60_000,
    placeholderData: (previous) => previous,
    queryFn: async () => {
      const names = new Map<string, string>();
      for (let i = 0; i < unique.length; i += 50) {
        const chunk = unique.slice(i, i + 50);
        const res = (await api.pickPatients({ query: { ids: chunk.join(','), limit: '50' } })).data.data;
        for (const p of res) names.set(p.id, p.label);
      }
      return names;
    },
  });
}
