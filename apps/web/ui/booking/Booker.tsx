import type { ResponseOf } from '@clinic/client';
import {
  addDays,
  allZones,
  api,
  browserZone,
  errorCode,
  formatDateTime,
  formatDay,
  formatLongDate,
  formatMoney,
  formatShortDateTime,
  formatTime,
  icsEvent,
  idempotencyKey,
  isApiError,
  localDate,
  Notice,
  type PageContext,
  Spinner,
  useI18n,
  zoneLabel,
} from '@clinic/ui';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useRef, useState } from 'react';
import { Button, Heading, Label, Radio, RadioGroup } from 'react-aria-components';
import { HoldPanel, type HoldState } from './HoldPanel.tsx';

type Org = NonNullable<PageContext['organization']>;
type Service = ResponseOf<'listPublicServices'>['data'][number];
type Specialist = ResponseOf<'listPublicSpecialists'>['data'][number];
type Slot = ResponseOf<'getPublicAvailability'>['data']['slots'][number];
export type Hold = ResponseOf<'placeHold'>['data'];
export type Booked = ResponseOf<'bookAsGuest'>['data'];

/** How many days the day strip shows at once (one availability request). */
const WINDOW_DAYS = 14;
const ANY = 'any';

export function Booker({ org, email }: { org: Org; email: string | null }) {
  const { t, lang } = useI18n();
  const queryClient = useQueryClient();
  const [serviceId, setServiceId] = useState<string | null>(null);
  const [specialistId, setSpecialistId] = useState<string>(ANY);
  const [zone, setZone] = useState(browserZone);
  const [windowStart, setWindowStart] = useState(() => localDate(new Date(), browserZone()));
  const [day, setDay] = useState<string | null>(null);
  const [hold, setHold] = useState<HoldState | null>(null);
  const [taken, setTaken] = useState<Slot | null>(null);
  const [booked, setBooked] = useState<{ appointment: Booked; slot: Slot } | null>(null);
  const timeHeading = useRef<HTMLHeadingElement>(null);

  const services = useQuery({
    queryKey: ['public-services', org.id],
    queryFn: async () => (await api.listPublicServices({ query: { organization: org.id, limit: '100', sort: 'name' } })).data.data,
  });
  const specialists = useQuery({
    queryKey: ['public-specialists', org.id],
    queryFn: async () =>
      (await api.listPublicSpecialists({ query: { organization: org.id, limit: '200', sort: 'display_name' } })).data.data,
  });
  const locations = useQuery({
    queryKey: ['public-locations', org.id],
    queryFn: async () => (await api.listPublicLocations({ query: { organization: org.id, limit: '100' } })).data.data,
  });
  const service = services.data?.find((s) => s.id === serviceId) ?? null;
  // One service is the usual small practice: pick it for the visitor.
  useEffect(() => {
    if (!serviceId && services.data?.length === 1) setServiceId(services.data[0]!.id);
  }, [services.data, serviceId]);

  const serviceSpecialists = useMemo(
    () => (specialists.data ?? []).filter((s) => service?.specialist_ids.includes(s.id)),
    [specialists.data, service],
  );
  const specialistName = (id: string) => specialists.data?.find((s) => s.id === id)?.display_name ?? '';
  const locationOf = (id: string | null | undefined) => locations.data?.find((l) => l.id === id) ?? locations.data?.[0] ?? null;
  const clinicZone = locationOf(service?.location_ids[0])?.timezone ?? null;

  const windowEnd = addDays(windowStart, WINDOW_DAYS - 1);
  const availability = useQuery({
    queryKey: ['availability', org.id, serviceId, specialistId, windowStart, zone],
    enabled: !!serviceId,
    queryFn: async () =>
      (
        await api.getPublicAvailability({
          query: {
            organization: org.id,
            service_id: serviceId!,
            from: windowStart,
            to: windowEnd,
            time_zone: zone,
            ...(specialistId !== ANY ? { specialist_id: specialistId } : {}),
          },
        })
      ).data.data,
  });
  const slotsByDay = useMemo(() => {
    const m = new Map<string, Slot[]>();
    for (const s of availability.data?.slots ?? []) {
      const d = s.start_local.slice(0, 10);
      m.set(d, [...(m.get(d) ?? []), s]);
    }
    return m;
  }, [availability.data]);
  const days = useMemo(() => Array.from({ length: WINDOW_DAYS }, (_, i) => addDays(windowStart, i)), [windowStart]);
  // The first day with free times is chosen when the times arrive (or the chosen day has none left).
  useEffect(() => {
    if (!availability.data) return;
    if (day && slotsByDay.has(day)) return;
    setDay(days.find((d) => slotsByDay.has(d)) ?? null);
  }, [availability.data, slotsByDay, days, day]);
  // Any slot shown once per (specialist, start): "any specialist" lists a time once, with the first free specialist.
  const daySlots = useMemo(() => {
    const seen = new Set<string>();
    return (day ? (slotsByDay.get(day) ?? []) : []).filter((s) => firstTime(seen, s.start));
  }, [slotsByDay, day]);

  const place = useMutation({
    mutationFn: async (slot: Slot) => {
      const res = await api.placeHold({
        body: {
          organization: org.id,
          service_id: serviceId!,
          specialist_id: slot.specialist_id,
          location_id: slot.location_id,
          start: slot.start,
        },
        idempotencyKey: idempotencyKey(),
      });
      return { hold: res.data.data, slot };
    },
    onMutate: () => setTaken(null),
    onSuccess: ({ hold: h, slot }) => setHold({ hold: h, slot, status: 'live', secondsLeft: null }),
    onError: (err, slot) => {
      if (errorCode(err) === 'slot_unavailable') {
        setTaken(slot);
        void queryClient.invalidateQueries({ queryKey: ['availability'] });
      }
    },
  });

  const pickAgain = () => {
    setHold(null);
    setTaken(null);
    void queryClient.invalidateQueries({ queryKey: ['availability'] });
    requestAnimationFrame(() => timeHeading.current?.focus());
  };

  const nextFree = useMemo(() => {
    if (!taken) return [];
    const seen = new Set<string>([taken.start]);
    return (availability.data?.slots ?? []).filter((s) => s.start > taken.start && firstTime(seen, s.start)).slice(0, 4);
  }, [taken, availability.data]);

  if (booked)
    return (
      <Confirmation
        booked={booked}
        service={service}
        specialist={specialistName(booked.slot.specialist_id)}
        zone={zone}
        location={locationOf(booked.slot.location_id)}
        onAgain={() => {
          setBooked(null);
          setHold(null);
          void queryClient.invalidateQueries({ queryKey: ['availability'] });
        }}
      />
    );

  if (services.isPending) return <Spinner />;
  if (services.isError)
    return (
      <Notice kind="error">
        {t('app.error')}{' '}
        <button type="button" className="button-link" onClick={() => void services.refetch()}>
          {t('app.retry')}
        </button>
      </Notice>
    );

  return (
    <div className="booker">
      <div className="page-head">
        <h1>{t('book.title')}</h1>
        <p>{t('book.lead')}</p>
      </div>
      {services.data.length === 0 ? (
        <Notice>{t('book.noServices')}</Notice>
      ) : (
        <div className="booker-grid">
          <aside className="card booker-summary" aria-label={t('book.summary')}>
            <p className="muted small eyebrow">{org.name}</p>
            {service ? (
              <>
                <h2>{service.name}</h2>
                <ul className="facts">
                  <li>{t('book.minutes', { n: service.duration_minutes })}</li>
                  <li>{t(`book.mode.${service.mode as 'in_person' | 'video' | 'phone'}`)}</li>
                  {service.price_minor > 0 && <li>{formatMoney(service.price_minor, service.currency, lang)}</li>}
                </ul>
                {service.description && <p className="muted small">{service.description}</p>}
              </>
            ) : (
              <p className="muted">{t('book.services')}</p>
            )}
            {hold && (
              <p className="summary-time">
                <strong>{formatLongDate(hold.slot.start, zone, lang)}</strong>
                <br />
                {formatTime(hold.slot.start, zone, lang)} – {formatTime(hold.slot.end, zone, lang)}
                <br />
                <span className="muted small">{specialistName(hold.slot.specialist_id)}</span>
              </p>
            )}
            <ZonePicker zone={zone} onChange={setZone} clinicZone={clinicZone} />
          </aside>

          <div className="booker-main stack">
            {hold ? (
              <HoldPanel
                org={org}
                email={email}
                state={hold}
                zone={zone}
                clinicZone={clinicZone}
                onState={setHold}
                onBooked={(appointment) => setBooked({ appointment, slot: hold.slot })}
                onPickAgain={pickAgain}
              />
            ) : (
              <>
                <section className="card" aria-labelledby="svc-h">
                  <RadioGroup
                    className="choice-group"
                    value={serviceId}
                    onChange={(v) => {
                      setServiceId(v);
                      setSpecialistId(ANY);
                      setDay(null);
                    }}
                  >
                    <Label className="section-title" id="svc-h">
                      1. {t('book.services')}
                    </Label>
                    <div className="choices">
                      {services.data.map((s: Service) => (
                        <Radio key={s.id} value={s.id} className="choice" aria-label={s.name}>
                          <span className="choice-title">{s.name}</span>
                          <span className="choice-meta">
                            {t('book.minutes', { n: s.duration_minutes })}
                            {s.price_minor > 0 ? ` · ${formatMoney(s.price_minor, s.currency, lang)}` : ''}
                          </span>
                        </Radio>
                      ))}
                    </div>
                  </RadioGroup>
                </section>

                {service && (
                  <section className="card" aria-labelledby="spec-h">
                    <RadioGroup
                      className="choice-group"
                      value={specialistId}
                      onChange={(v) => {
                        setSpecialistId(v);
                        setDay(null);
                      }}
                    >
                      <Label className="section-title" id="spec-h">
                        2. {t('book.specialists')}
                      </Label>
                      <div className="choices">
                        <Radio value={ANY} className="choice" aria-label={t('book.anySpecialist')}>
                          <span className="choice-title">{t('book.anySpecialist')}</span>
                          <span className="choice-meta">{t('book.anySpecialistHint')}</span>
                        </Radio>
                        {serviceSpecialists.map((s: Specialist) => (
                          <Radio key={s.id} value={s.id} className="choice" aria-label={s.display_name}>
                            <span className="avatar" aria-hidden="true">
                              {initials(s.display_name)}
                            </span>
                            <span className="choice-title">{s.display_name}</span>
                            {s.title && <span className="choice-meta">{s.title}</span>}
                          </Radio>
                        ))}
                      </div>
                    </RadioGroup>
                  </section>
                )}

                {service && (
                  <section className="card" aria-labelledby="time-h">
                    <Heading level={2} className="section-title" id="time-h" ref={timeHeading} tabIndex={-1}>
                      3. {t('book.step.time')}
                    </Heading>
                    {taken && (
                      <Notice kind="warning">
                        <p>{t('book.taken', { time: formatDateTime(taken.start, zone, lang) })}</p>
                        {nextFree.length > 0 && (
                          <>
                            <p>{t('book.nextFree')}</p>
                            <div className="slot-grid">
                              {nextFree.map((s) => (
                                <Button key={s.start + s.specialist_id} className="slot" onPress={() => place.mutate(s)}>
                                  {formatShortDateTime(s.start, zone, lang)}
                                </Button>
                              ))}
                            </div>
                          </>
                        )}
                      </Notice>
                    )}
                    {place.isError && errorCode(place.error) !== 'slot_unavailable' && (
                      <Notice kind="error">{errorCode(place.error) === 'rate_limited' ? t('book.rateLimited') : t('app.error')}</Notice>
                    )}
                    <div className="day-nav">
                      <Button
                        className="button button-secondary icon-button"
                        aria-label={t('book.earlier')}
                        isDisabled={windowStart <= localDate(new Date(), zone)}
                        onPress={() => {
                          setWindowStart(addDays(windowStart, -WINDOW_DAYS));
                          setDay(null);
                        }}
                      >
                        ‹
                      </Button>
                      <fieldset className="plain day-strip">
                        <legend className="visually-hidden">{t('book.pickDay')}</legend>
                        {days.map((d) => {
                          const n = new Set((slotsByDay.get(d) ?? []).map((s) => s.start)).size;
                          const f = formatDay(d, lang);
                          const long = formatDay(d, lang, 'long');
                          return (
                            <button
                              key={d}
                              type="button"
                              className="day"
                              aria-pressed={d === day}
                              disabled={n === 0}
                              aria-label={`${long.weekday} ${long.day} ${long.month}, ${t('book.slotsCount', { n })}`}
                              onClick={() => setDay(d)}
                            >
                              <span className="day-weekday">{f.weekday}</span>
                              <span className="day-num">{f.day}</span>
                              <span className="day-month">{f.month}</span>
                            </button>
                          );
                        })}
                      </fieldset>
                      <Button
                        className="button button-secondary icon-button"
                        aria-label={t('book.later')}
                        onPress={() => {
                          setWindowStart(addDays(windowStart, WINDOW_DAYS));
                          setDay(null);
                        }}
                      >
                        ›
                      </Button>
                    </div>
                    {availability.isPending ? (
                      <Spinner />
                    ) : availability.isError ? (
                      <Notice kind="error">{t('app.error')}</Notice>
                    ) : day ? (
                      <fieldset className="plain">
                        <legend className="slots-title">
                          {t('book.pickTime', { day: formatLongDate(daySlots[0]?.start ?? `${day}T12:00:00Z`, zone, lang) })}
                        </legend>
                        <div className="slot-grid">
                          {daySlots.map((s) => (
                            <Button
                              key={s.start}
                              className="slot"
                              isDisabled={place.isPending}
                              aria-label={formatTime(s.start, zone, lang)}
                              onPress={() => place.mutate(s)}
                            >
                              {formatTime(s.start, zone, lang)}
                            </Button>
                          ))}
                        </div>
                        {place.isPending && <Spinner label={t('book.holding')} />}
                      </fieldset>
                    ) : (
                      <Notice>{t('book.noSlots', { n: WINDOW_DAYS })}</Notice>
                    )}
                  </section>
                )}
              </>
            )}
          </div>
        </div>
      )}
    </div>
  );
}

/** True the first time a key is seen (and remembers it). */
function firstTime(seen: Set<string>, key: string): boolean {
  if (seen.has(key)) return false;
  seen.add(key);
  return true;
}

function initials(name: string): string {
  return name
    .split(/\s+/)
    .filter(Boolean)
    .slice(-2)
    .map((p) => p[0]!.toUpperCase())
    .join('');
}

function ZonePicker({ zone, onChange, clinicZone }: { zone: string; onChange: (z: string) => void; clinicZone: string | null }) {
  const { t } = useI18n();
  const zones = useMemo(() => allZones(zone, clinicZone ?? ''), [zone, clinicZone]);
  return (
    <div className="zone-picker">
      <label className="small" htmlFor="tz">
        {t('book.timeZone')}
      </label>
      <select id="tz" value={zone} onChange={(e) => onChange(e.target.value)}>
        {zones.map((z) => (
          <option key={z} value={z}>
            {z.replaceAll('_', ' ')}
          </option>
        ))}
      </select>
      {clinicZone && <p className="muted small">{t('book.clinicZone', { zone: zoneLabel(clinicZone) })}</p>}
    </div>
  );
}

function Confirmation({
  booked,
  service,
  specialist,
  zone,
  location,
  onAgain,
}: {
  booked: { appointment: Booked; slot: Slot };
  service: Service | null;
  specialist: string;
  zone: string;
  location: { name: string; address_line1: string | null; city: string | null } | null;
  onAgain: () => void;
}) {
  const { t, lang } = useI18n();
  const a = booked.appointment;
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  const summary = service ? t('book.doneWith', { service: service.name, specialist }) : specialist;
  const where = location ? [location.name, location.address_line1, location.city].filter(Boolean).join(', ') : undefined;
  // A data: URL rather than a blob: one, which would need revoking (and React's development double effects revoke it early).
  const href = useMemo(() => {
    const ics = icsEvent({
      uid: `${a.id}@${location?.name ? location.name.replace(/\s+/g, '-').toLowerCase() : 'clinic'}`,
      start: a.starts_at,
      end: a.ends_at,
      summary,
      ...(where ? { location: where } : {}),
    });
    return `data:text/calendar;charset=utf-8,${encodeURIComponent(ics)}`;
  }, [a, summary, where, location]);
  return (
    <section className="card confirmation" aria-labelledby="done-h">
      <div className="check" aria-hidden="true">
        ✓
      </div>
      <h1 id="done-h" ref={heading} tabIndex={-1}>
        {t('book.done')}
      </h1>
      <p className="lead">{summary}</p>
      <p>
        <strong>{formatLongDate(a.starts_at, zone, lang)}</strong>, {formatTime(a.starts_at, zone, lang)} –{' '}
        {formatTime(a.ends_at, zone, lang)} <span className="muted small">({zoneLabel(zone, a.starts_at)})</span>
      </p>
      {where && <p className="muted">{where}</p>}
      <p className="muted small">{t('book.doneLead')}</p>
      <div className="button-row">
        <a className="button" href={href} download="appointment.ics">
          {t('book.ics')}
        </a>
        <button type="button" className="button button-secondary" onClick={onAgain}>
          {t('book.another')}
        </button>
      </div>
    </section>
  );
}

export function isTaken(err: unknown): boolean {
  return isApiError(err) && err.code === 'slot_unavailable';
}
