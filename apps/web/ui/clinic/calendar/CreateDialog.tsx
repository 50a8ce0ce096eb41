import { api, clockLabel, Dialog, idempotencyKey, Notice, useI18n, zonedInstant } from '@clinic/ui';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useId, useState } from 'react';
import type { Appointment, Service, Specialist } from './data.ts';
import { refusal } from './messages.ts';

/** Booking by the front desk: a patient, a service, a specialist and a start on the location's wall clock. */
export function CreateDialog({
  initial,
  specialists,
  services,
  locationId,
  zone,
  onClose,
  onCreated,
}: {
  initial: { date: string; minutes: number; specialistId: string | null };
  specialists: readonly Specialist[];
  services: readonly Service[];
  locationId: string | null;
  zone: string;
  onClose: () => void;
  onCreated: (appointment: Appointment) => void;
}) {
  const { t } = useI18n();
  const id = useId();
  const [q, setQ] = useState('');
  const [patientId, setPatientId] = useState('');
  const [specialistId, setSpecialistId] = useState(initial.specialistId ?? specialists[0]?.id ?? '');
  const offered = services.filter((s) => !specialistId || (s.specialist_ids ?? []).includes(specialistId));
  const [serviceId, setServiceId] = useState(offered[0]?.id ?? '');
  const [date, setDate] = useState(initial.date);
  // A start on the service's grid (multiples of its slot interval after midnight, as the API's slots are).
  const [time, setTime] = useState(() => {
    const step = offered[0]?.slot_interval_minutes ?? 15;
    return clockLabel(Math.min(1440 - step, Math.ceil(initial.minutes / step) * step));
  });
  const [error, setError] = useState<string | null>(null);
  const patients = useQuery({
    queryKey: ['cal', 'pick-patients', q.trim()],
    placeholderData: (previous) => previous,
    queryFn: async () => (await api.pickPatients({ query: { q: q.trim(), limit: '20' } })).data.data,
  });
  const create = useMutation({
    mutationFn: async () => {
      const [h, m] = time.split(':').map(Number);
      const start = zonedInstant(date, (h ?? 0) * 60 + (m ?? 0), zone).toISOString();
      return (
        await api.createAppointment({
          body: {
            service_id: serviceId,
            specialist_id: specialistId,
            start,
            patient_id: patientId,
            ...(locationId ? { location_id: locationId } : {}),
          },
          idempotencyKey: idempotencyKey(),
        })
      ).data.data;
    },
    onSuccess: (a) => onCreated(a),
    onError: (err) => setError(refusal(err, t)),
  });
  const ready = patientId && serviceId && specialistId && date && time;
  return (
    <Dialog title={t('cal.new')} onClose={onClose} wide>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setError(null);
          if (ready) create.mutate();
        }}
      >
        <div className="cal-form-grid">
          <div className="field cal-span-2">
            <label htmlFor={`${id}-q`}>{t('cal.create.patient.search')}</label>
            <input id={`${id}-q`} type="search" value={q} onChange={(e) => setQ(e.target.value)} autoComplete="off" />
          </div>
          <div className="field cal-span-2">
            <label htmlFor={`${id}-patient`}>{t('cal.create.patient')}</label>
            <select id={`${id}-patient`} value={patientId} onChange={(e) => setPatientId(e.target.value)} required size={5}>
              {(patients.data ?? []).map((p) => (
                <option key={p.id} value={p.id}>
                  {p.label}
                  {p.detail ? ` · ${p.detail}` : ''}
                </option>
              ))}
            </select>
            {patients.data && patients.data.length === 0 && <span className="muted small">{t('cal.create.patient.none')}</span>}
          </div>
          <div className="field">
            <label htmlFor={`${id}-specialist`}>{t('cal.create.specialist')}</label>
            <select
              id={`${id}-specialist`}
              value={specialistId}
              onChange={(e) => {
                setSpecialistId(e.target.value);
                const still = services.filter((s) => (s.specialist_ids ?? []).includes(e.target.value));
                if (!still.some((s) => s.id === serviceId)) setServiceId(still[0]?.id ?? '');
              }}
              required
            >
              {specialists.map((s) => (
                <option key={s.id} value={s.id}>
                  {s.display_name}
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor={`${id}-service`}>{t('cal.create.service')}</label>
            <select id={`${id}-service`} value={serviceId} onChange={(e) => setServiceId(e.target.value)} required>
              {!offered.length && <option value="">{t('cal.create.choose')}</option>}
              {offered.map((s) => (
                <option key={s.id} value={s.id}>
                  {s.name} ({t('book.minutes', { n: s.duration_minutes })})
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor={`${id}-date`}>{t('cal.create.date')}</label>
            <input id={`${id}-date`} type="date" value={date} onChange={(e) => setDate(e.target.value)} required />
          </div>
          <div className="field">
            <label htmlFor={`${id}-time`}>{t('cal.create.time')}</label>
            <input id={`${id}-time`} type="time" step={300} value={time} onChange={(e) => setTime(e.target.value)} required />
          </div>
        </div>
        <p className="muted small">{t('cal.zone', { zone: zone.replaceAll('_', ' ') })}</p>
        {error && <Notice kind="error">{error}</Notice>}
        <div className="button-row">
          <button type="submit" className="button" disabled={!ready || create.isPending}>
            {t('cal.create.submit')}
          </button>
          <button type="button" className="button button-secondary" onClick={onClose}>
            {t('common.close')}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
