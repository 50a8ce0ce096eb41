import {
  addDays,
  buildColumns,
  type CalendarColumn,
  type Resource,
  type View,
  viewDates,
  clockLabel,
  formatDay,
  localDate,
  type MessageKey,
  navigate,
  Notice,
  Spinner,
  useI18n,
  useLocation,
  wallMinutes,
  zonedInstant,
  zoneLabel,
  api,
  idempotencyKey,
} from '@clinic/ui';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useCallback, useMemo, useState } from 'react';
import type { ScreenProps } from '../screen-props.ts';
import { AppointmentDialog } from './AppointmentDialog.tsx';
import { CalendarGrid, type GridAppointment } from './CalendarGrid.tsx';
import { CreateDialog } from './CreateDialog.tsx';
import { type Appointment, LIVE_SECONDS, useAppointments, useDirectory, usePatientNames, useWindows } from './data.ts';
import { refusal } from './messages.ts';

type Group = 'specialists' | 'calendars';

/**
 * The calendar (issue 30, area 1): day and week views by specialist or by calendar (rooms and devices too),
 * at one location, in that location's zone. The view's settings live in the address (?view=&date=&location=
 * &group=&show=), so a reload or a shared link shows the same calendar.
 */
export function CalendarScreen({ ctx, can }: ScreenProps) {
  const { t, lang } = useI18n();
  const { search } = useLocation();
  const queryClient = useQueryClient();
  const orgId = ctx.organization?.id ?? '';
  const dir = useDirectory(orgId);
  const locations = dir.locations.data ?? [];
  const location = locations.find((l) => l.id === search.get('location')) ?? locations[0] ?? null;
  const zone = location?.timezone ?? 'UTC';
  const view: View = search.get('view') === 'week' ? 'week' : 'day';
  const group: Group = search.get('group') === 'calendars' ? 'calendars' : 'specialists';
  const today = localDate(new Date(), zone);
  const date = /^\d{4}-\d{2}-\d{2}$/.test(search.get('date') ?? '') ? search.get('date')! : today;
  const show = search.get('show') ?? 'all';
  const set = useCallback(
    (changes: Record<string, string | null>) => {
      const next = new URLSearchParams(location ? { location: location.id } : {});
      for (const [k, v] of new URLSearchParams(globalThis.location.search)) next.set(k, v);
      for (const [k, v] of Object.entries(changes))
        if (v === null) next.delete(k);
        else next.set(k, v);
      navigate(`/clinic/calendar?${next.toString()}`, { replace: true });
    },
    [location],
  );

  const specialistsHere = useMemo(
    () => (dir.specialists.data ?? []).filter((s) => !location || (s.location_ids ?? []).includes(location.id)),
    [dir.specialists.data, location],
  );
  const allResources: Resource[] = useMemo(() => {
    if (group === 'specialists') return specialistsHere.map((s) => ({ id: s.id, label: s.display_name, specialistId: s.id }));
    const here = new Set(specialistsHere.map((s) => s.id));
    return (dir.calendars.data ?? [])
      .filter((c) => (c.specialist_id ? here.has(c.specialist_id) : !location || c.location_id === location.id))
      .map((c) => ({ id: c.id, label: c.name, specialistId: c.specialist_id }));
  }, [group, specialistsHere, dir.calendars.data, location]);
  const resources = useMemo(() => (show === 'all' ? allResources : allResources.filter((r) => r.id === show)), [allResources, show]);
  const dates = useMemo(() => viewDates(view, date), [view, date]);
  const columns = useMemo(() => buildColumns(dates, resources), [dates, resources]);
  const from = useMemo(() => zonedInstant(dates[0]!, 0, zone), [dates, zone]);
  const to = useMemo(() => zonedInstant(addDays(dates[dates.length - 1]!, 1), 0, zone), [dates, zone]);

  const appts = useAppointments(from, to, location?.id ?? null);
  const windows = useWindows(resources, dates[0]!, dates[dates.length - 1]!, location?.id ?? null);
  const names = usePatientNames((appts.data ?? []).flatMap((a) => (a.patient_id ? [a.patient_id] : [])));
  const services = useMemo(() => new Map((dir.services.data ?? []).map((s) => [s.id, s])), [dir.services.data]);
  const specialistNames = useMemo(() => new Map((dir.specialists.data ?? []).map((s) => [s.id, s.display_name])), [dir.specialists.data]);
  const mayMove = can('appointments.update_org') || can('appointments.update_own');
  const patientLabel = useCallback(
    (a: Appointment) =>
      a.patient_id ? (names.data?.get(a.patient_id) ?? '…') : a.guest_name ? t('cal.guest', { name: a.guest_name }) : t('cal.noPatient'),
    [names.data, t],
  );
  const gridAppointments: GridAppointment[] = useMemo(
    () =>
      (appts.data ?? []).map((a) => ({
        id: a.id,
        start: a.starts_at,
        end: a.ends_at,
        resourceId: a.specialist_id,
        title: patientLabel(a),
        subtitle: services.get(a.service_id)?.name ?? '',
        status: a.status,
        statusLabel: t(`cal.status.${a.status}` as MessageKey),
        movable: mayMove && (a.status === 'scheduled' || a.status === 'confirmed'),
        step: services.get(a.service_id)?.slot_interval_minutes ?? 15,
      })),
    [appts.data, patientLabel, services, mayMove, t],
  );

  const [opened, setOpened] = useState<string | null>(null);
  const [moving, setMoving] = useState<string | null>(null);
  const [creating, setCreating] = useState<{ date: string; minutes: number; specialistId: string | null } | null>(null);
  const [status, setStatus] = useState<{ kind: 'success' | 'error' | 'info'; text: string } | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['cal', 'appointments'] });

  const move = useMutation({
    mutationFn: async (v: { id: string; column: CalendarColumn; minutes: number }) => {
      const a = appts.data?.find((x) => x.id === v.id);
      const specialistId = v.column.resource.specialistId;
      if (!specialistId) throw new Error('room');
      return (
        await api.updateAppointment({
          params: { id: v.id },
          body: {
            start: zonedInstant(v.column.date, v.minutes, zone).toISOString(),
            ...(a && a.specialist_id !== specialistId ? { specialist_id: specialistId } : {}),
          },
          idempotencyKey: idempotencyKey(),
        })
      ).data.data;
    },
    onSuccess: (_a, v) => {
      setStatus({ kind: 'success', text: t('cal.moved', { time: clockLabel(v.minutes), resource: v.column.resource.label }) });
      void refresh();
    },
    onError: (err) =>
      setStatus({ kind: 'error', text: err instanceof Error && err.message === 'room' ? t('cal.move.room') : refusal(err, t) }),
    onSettled: () => setMoving(null),
  });

  if (dir.locations.isPending || dir.specialists.isPending) return <Spinner />;
  if (dir.locations.isError || dir.specialists.isError)
    return <Notice kind="error">{refusal(dir.locations.error ?? dir.specialists.error, t)}</Notice>;
  const openedAppointment = opened ? appts.data?.find((a) => a.id === opened) : undefined;
  const step = view === 'day' ? 1 : 7;
  const day = formatDay(dates[0]!, lang, 'long');
  const last = formatDay(dates[dates.length - 1]!, lang, 'long');
  const title = view === 'day' ? `${day.weekday}, ${day.day} ${day.month}` : `${day.day} ${day.month} – ${last.day} ${last.month}`;
  const mayCreate = can('appointments.create');

  return (
    <div className="cal">
      <div className="cal-head">
        <div>
          <h1>{t('clinic.area.calendar')}</h1>
          <p className="muted cal-subtitle">
            <span className="cal-range">{title}</span> · {t('cal.zone', { zone: zoneLabel(zone, from) })}
          </p>
        </div>
        {mayCreate && location && (
          <button
            type="button"
            className="button"
            onClick={() =>
              setCreating({
                date,
                minutes: Math.max(8 * 60, Math.ceil(wallMinutes(new Date(), date, zone) / 15) * 15),
                specialistId: resources[0]?.specialistId ?? null,
              })
            }
          >
            {t('cal.new')}
          </button>
        )}
      </div>

      <div className="cal-toolbar">
        <div className="cal-nav">
          <button
            type="button"
            className="button button-secondary"
            onClick={() => set({ date: addDays(date, -step) })}
            aria-label={t(view === 'day' ? 'cal.prev.day' : 'cal.prev.week')}
          >
            ‹
          </button>
          <button type="button" className="button button-secondary" onClick={() => set({ date: today })}>
            {t('cal.today')}
          </button>
          <button
            type="button"
            className="button button-secondary"
            onClick={() => set({ date: addDays(date, step) })}
            aria-label={t(view === 'day' ? 'cal.next.day' : 'cal.next.week')}
          >
            ›
          </button>
          <label className="cal-field">
            <span className="visually-hidden">{t('cal.date')}</span>
            <input type="date" value={date} onChange={(e) => e.target.value && set({ date: e.target.value })} aria-label={t('cal.date')} />
          </label>
        </div>
        <fieldset className="cal-segmented">
          <legend className="visually-hidden">{t('cal.view')}</legend>
          {(['day', 'week'] as const).map((v) => (
            <label key={v} className="cal-seg">
              <input type="radio" name="cal-view" value={v} checked={view === v} onChange={() => set({ view: v })} />
              {t(`cal.view.${v}`)}
            </label>
          ))}
        </fieldset>
        <label className="cal-field">
          <span>{t('cal.location')}</span>
          <select value={location?.id ?? ''} onChange={(e) => set({ location: e.target.value, show: null })}>
            {locations.map((l) => (
              <option key={l.id} value={l.id}>
                {l.name}
              </option>
            ))}
          </select>
        </label>
        <label className="cal-field">
          <span>{t('cal.group')}</span>
          <select value={group} onChange={(e) => set({ group: e.target.value, show: null })}>
            <option value="specialists">{t('cal.group.specialists')}</option>
            <option value="calendars">{t('cal.group.calendars')}</option>
          </select>
        </label>
        <label className="cal-field">
          <span>{t('cal.resource')}</span>
          <select value={show} onChange={(e) => set({ show: e.target.value === 'all' ? null : e.target.value })}>
            <option value="all">{t('cal.resource.all')}</option>
            {allResources.map((r) => (
              <option key={r.id} value={r.id}>
                {r.label}
              </option>
            ))}
          </select>
        </label>
      </div>

      <div className="cal-status" aria-live="polite">
        {status && <Notice kind={status.kind}>{status.text}</Notice>}
        {moving && <p className="cal-hint">{t('cal.move.started')}</p>}
      </div>

      {!location ? (
        <Notice>{t('cal.noLocations')}</Notice>
      ) : !resources.length ? (
        <Notice>{t('cal.noResources')}</Notice>
      ) : (
        <>
          <CalendarGrid
            columns={columns}
            zone={zone}
            today={today}
            windows={windows}
            appointments={gridAppointments}
            moving={moving}
            onOpen={setOpened}
            onCreateAt={
              mayCreate ? (c, minutes) => setCreating({ date: c.date, minutes, specialistId: c.resource.specialistId }) : undefined
            }
            onMove={(id, column, minutes) => move.mutate({ id, column, minutes })}
            onMoveEnd={() => {
              setMoving(null);
              setStatus({ kind: 'info', text: t('cal.move.cancelled') });
            }}
          />
          <div className="cal-legend muted small">
            <span>
              <span className="cal-swatch cal-swatch-open" aria-hidden="true" /> {t('cal.legend.open')}
            </span>
            <span>
              <span className="cal-swatch cal-swatch-closed" aria-hidden="true" /> {t('cal.legend.closed')}
            </span>
            <span>{t('cal.live', { n: LIVE_SECONDS })}</span>
          </div>
        </>
      )}

      {openedAppointment && (
        <AppointmentDialog
          appointment={openedAppointment}
          patient={patientLabel(openedAppointment)}
          service={services.get(openedAppointment.service_id)?.name ?? ''}
          specialist={openedAppointment.specialist_id ? (specialistNames.get(openedAppointment.specialist_id) ?? '') : ''}
          zone={zone}
          can={can}
          onClose={() => setOpened(null)}
          onChanged={(text) => {
            setOpened(null);
            setStatus({ kind: 'success', text });
            void refresh();
          }}
          onMove={() => {
            setOpened(null);
            setStatus(null);
            setMoving(openedAppointment.id);
          }}
        />
      )}
      {creating && location && (
        <CreateDialog
          initial={creating}
          specialists={specialistsHere}
          services={dir.services.data ?? []}
          locationId={location.id}
          zone={zone}
          onClose={() => setCreating(null)}
          onCreated={(a) => {
            setCreating(null);
            setStatus({
              kind: 'success',
              text: t('cal.created', { time: clockLabel(wallMinutes(a.starts_at, localDate(a.starts_at, zone), zone)) }),
            });
            void refresh();
          }}
        />
      )}
    </div>
  );
}
