import { api, formatDay, type MessageKey, Spinner, TrendChart, useI18n } from '@clinic/ui';
import { useQuery } from '@tanstack/react-query';
import { Empty, type SectionProps, ServerError } from '../parts.tsx';

type Enrollment = Awaited<ReturnType<typeof api.listEnrollments>>['data']['data'][number];

/**
 * The patient's treatment plans (GET /v1/treatment-plans/enrollments?patient_id=) and, with telemetry.view_org,
 * each one's progress (adherence, and per exercise the form score and repetitions by session) as charts with
 * their tables. The organization's telerehab switch off answers 403 telerehab_disabled: shown as the server says.
 */
export function PlansSection({ patientId, can }: SectionProps) {
  const { t } = useI18n();
  const list = useQuery({
    queryKey: ['patient-enrollments', patientId],
    queryFn: async () => (await api.listEnrollments({ query: { patient_id: patientId, limit: '50', sort: '-created_at' } })).data.data,
  });
  if (list.isPending) return <Spinner />;
  if (list.isError) return <ServerError error={list.error} />;
  if (!list.data.length) return <Empty>{t('patients.plans.none')}</Empty>;
  return (
    <div className="stack">
      {list.data.map((e) => (
        <PlanCard key={e.id} enrollment={e} progress={can('telemetry.view_org')} />
      ))}
    </div>
  );
}

function PlanCard({ enrollment: e, progress }: { enrollment: Enrollment; progress: boolean }) {
  const { t, lang } = useI18n();
  const data = useQuery({
    queryKey: ['enrollment-progress', e.id],
    enabled: progress,
    queryFn: async () => (await api.getEnrollmentProgress({ params: { id: e.id } })).data.data,
  });
  const day = (d: string) => {
    const f = formatDay(d, lang);
    return `${f.day} ${f.month}`;
  };
  const a = data.data?.adherence;
  const rate = a ? (a.day_rate ?? a.item_rate) : null;
  return (
    <article className="card pr-card" aria-labelledby={`plan-${e.id}`}>
      <div className="pr-card-head">
        <h2 id={`plan-${e.id}`}>
          {e.plan_name} <span className="muted small">v{e.plan_version}</span>
        </h2>
        <span className={`badge ${e.status === 'active' ? 'badge-success' : 'badge-muted'}`}>
          {t(`patients.plans.status.${e.status}` as MessageKey)}
        </span>
      </div>
      <p className="muted small">
        {t('patients.plans.since', { date: day(e.start_date) })}
        {e.schedule.total_days !== null
          ? ` · ${t('patients.plans.days', { done: e.schedule.days_due, total: e.schedule.total_days })}`
          : ''}
      </p>
      {progress &&
        (data.isPending ? (
          <Spinner />
        ) : data.isError ? (
          <ServerError error={data.error} />
        ) : (
          <div className="stack">
            <div>
              <p className="pr-adherence">
                <strong>{t('progress.adherence')}:</strong> {rate === null ? '—' : `${Math.round(rate * 100)}%`}{' '}
                <span className="muted small">
                  {t('patients.plans.items', { done: data.data.adherence.items_completed, due: data.data.adherence.items_due })}
                </span>
              </p>
              {rate !== null && (
                <meter className="pr-meter" aria-label={t('progress.adherence')} min={0} max={100} value={Math.round(rate * 100)} />
              )}
            </div>
            {data.data.exercises.length === 0 ? (
              <p className="muted">{t('progress.none')}</p>
            ) : (
              data.data.exercises.map((x) => (
                <section key={x.exercise_id} className="pr-exercise">
                  <h3>
                    {x.name ?? t('patients.plans.exercise')}{' '}
                    <span className="muted small">
                      {t('patients.plans.exerciseFacts', {
                        sessions: x.sessions,
                        reps: x.total_reps,
                        score: x.form_score_mean === null ? '—' : Math.round(x.form_score_mean),
                      })}
                    </span>
                  </h3>
                  <div className="pr-charts">
                    <TrendChart
                      title={t('progress.formScore')}
                      max={100}
                      points={x.series.map((s) => ({ label: day(s.date), value: s.form_score }))}
                    />
                    <TrendChart title={t('progress.reps')} points={x.series.map((s) => ({ label: day(s.date), value: s.rep_count }))} />
                  </div>
                </section>
              ))
            )}
          </div>
        ))}
    </article>
  );
}
