import {
  api,
  clockLabel,
  Dialog,
  formatLongDate,
  idempotencyKey,
  type MessageKey,
  Notice,
  useI18n,
  wallMinutes,
  localDate,
} from '@clinic/ui';
import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import type { Appointment } from './data.ts';
import { refusal } from './messages.ts';

/** The state machine's moves (the API's MOVES), in the order the front desk meets them. */
export const NEXT: Record<string, readonly string[]> = {
  scheduled: ['confirmed', 'checked_in', 'no_show', 'cancelled'],
  confirmed: ['checked_in', 'no_show', 'cancelled'],
  checked_in: ['in_progress', 'done'],
  in_progress: ['done'],
};

/** The details of an appointment and the actions the member may take on it now. */
export function AppointmentDialog({
  appointment,
  patient,
  service,
  specialist,
  zone,
  can,
  onClose,
  onChanged,
  onMove,
}: {
  appointment: Appointment;
  patient: string;
  service: string;
  specialist: string;
  zone: string;
  can: (code: string) => boolean;
  onClose: () => void;
  onChanged: (message: string) => void;
  onMove: () => void;
}) {
  const { t, lang } = useI18n();
  const [cancelling, setCancelling] = useState(false);
  const [reason, setReason] = useState('');
  const [error, setError] = useState<string | null>(null);
  const mayUpdate = can('appointments.update_org') || can('appointments.update_own');
  const mayCancel = can('appointments.cancel_org') || can('appointments.cancel_own');
  const change = useMutation({
    mutationFn: async (to: string) =>
      (
        await api.updateAppointment({
          params: { id: appointment.id },
          body: { status: to as never, ...(to === 'cancelled' ? { cancellation_reason: reason.trim() || null } : {}) },
          idempotencyKey: idempotencyKey(),
        } as never)
      ).data.data,
    onSuccess: (_data, to) => onChanged(t('cal.statusChanged', { status: t(`cal.status.${to}` as MessageKey) })),
    onError: (err) => setError(refusal(err, t)),
  });
  const date = localDate(appointment.starts_at, zone);
  const from = clockLabel(wallMinutes(appointment.starts_at, date, zone));
  const to = clockLabel(wallMinutes(appointment.ends_at, date, zone));
  const actions = (NEXT[appointment.status] ?? []).filter((s) => (s === 'cancelled' ? mayCancel : mayUpdate));
  const movable = mayUpdate && (appointment.status === 'scheduled' || appointment.status === 'confirmed');
  const source = `cal.source.${appointment.source}` as MessageKey;
  return (
    <Dialog title={patient} onClose={onClose}>
      <dl className="cal-details">
        <dt>{t('cal.detail.when')}</dt>
        <dd>
          {formatLongDate(appointment.starts_at, zone, lang)}, {from}–{to}
        </dd>
        <dt>{t('cal.detail.service')}</dt>
        <dd>{service}</dd>
        <dt>{t('cal.detail.specialist')}</dt>
        <dd>{specialist}</dd>
        <dt>{t('cal.detail.status')}</dt>
        <dd>
          <span className={`badge cal-badge-${appointment.status}`}>{t(`cal.status.${appointment.status}` as MessageKey)}</span>
        </dd>
        <dt>{t('cal.detail.source')}</dt>
        <dd>{['staff', 'patient', 'guest'].includes(appointment.source) ? t(source) : appointment.source}</dd>
      </dl>
      {error && <Notice kind="error">{error}</Notice>}
      {cancelling ? (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            setError(null);
            change.mutate('cancelled');
          }}
        >
          <div className="field">
            <label htmlFor="cal-cancel-reason">{t('cal.cancel.reason')}</label>
            <textarea id="cal-cancel-reason" value={reason} onChange={(e) => setReason(e.target.value)} maxLength={500} />
          </div>
          <div className="button-row">
            <button type="submit" className="button button-danger" disabled={change.isPending}>
              {t('cal.cancel.confirm')}
            </button>
            <button type="button" className="button button-secondary" onClick={() => setCancelling(false)}>
              {t('cal.cancel.keep')}
            </button>
          </div>
        </form>
      ) : (
        (actions.length > 0 || movable) && (
          <div className="button-row">
            {actions.map((s) => (
              <button
                key={s}
                type="button"
                className={`button ${s === 'cancelled' || s === 'no_show' ? 'button-secondary' : ''}`}
                disabled={change.isPending}
                onClick={() => {
                  setError(null);
                  if (s === 'cancelled') setCancelling(true);
                  else change.mutate(s);
                }}
              >
                {t(`cal.action.${s}` as MessageKey)}
              </button>
            ))}
            {movable && (
              <button type="button" className="button button-secondary" onClick={onMove}>
                {t('cal.action.move')}
              </button>
            )}
          </div>
        )
      )}
    </Dialog>
  );
}
