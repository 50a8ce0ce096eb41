import { api, formatLongDate, formatTime, localDate, Spinner, useI18n } from '@clinic/ui';
import { useQuery } from '@tanstack/react-query';
import type { ScreenProps } from '../screen-props.ts';

/** The calendar: today's appointments of the clinic (the day and week grids come next). */
export function CalendarScreen(_props: ScreenProps) {
  const { t, lang } = useI18n();
  const zone = 'Europe/Bucharest';
  const today = localDate(new Date(), zone);
  const list = useQuery({
    queryKey: ['appointments', today],
    queryFn: async () =>
      (await api.listAppointments({ query: { starts_at_from: `${today}T00:00:00Z`, limit: '200', sort: 'starts_at' } as never })).data.data,
  });
  return (
    <div>
      <div className="page-head">
        <h1>{t('clinic.area.calendar')}</h1>
        <p>{formatLongDate(new Date(), zone, lang)}</p>
      </div>
      {list.isPending ? (
        <Spinner />
      ) : (
        <ul className="list card">
          {(list.data ?? []).map((a) => (
            <li key={a.id} className="list-item">
              {formatTime(a.starts_at, zone, lang)} <span className="badge">{a.status}</span>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
