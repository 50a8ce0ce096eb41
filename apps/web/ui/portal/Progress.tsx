import { api, Notice, Spinner, useI18n } from '@clinic/ui';
import { useQuery } from '@tanstack/react-query';

/** My progress: adherence, repetitions and form score per exercise of each enrollment, as an SVG chart and a table. */
export default function Progress({ headers }: { headers: Record<string, string> | undefined }) {
  const { t } = useI18n();
  const h = headers ? { headers } : {};
  const progress = useQuery({
    queryKey: ['progress', headers],
    queryFn: async () => {
      const enrollments = (await api.listEnrollments({ query: { limit: '20' }, ...h })).data.data as { id: string }[];
      return Promise.all(enrollments.map(async (e) => (await api.getEnrollmentProgress({ params: { id: e.id }, ...h })).data.data));
    },
  });
  if (progress.isPending) return <Spinner />;
  if (progress.isError) return <Notice kind="error">{t('app.error')}</Notice>;
  if (!progress.data.length) return <p className="muted">{t('progress.none')}</p>;
  return (
    <div className="stack">
      {progress.data.map((p) => {
        const rate = p.adherence.day_rate ?? p.adherence.item_rate ?? 0;
        const rows = p.exercises.map((x) => ({ name: x.name ?? '', reps: x.total_reps, score: x.form_score_mean }));
        const maxReps = Math.max(1, ...rows.map((r) => r.reps));
        const barH = 28;
        const height = rows.length * barH + 8;
        const summary = rows
          .map(
            (r) =>
              `${r.name}: ${r.reps} ${t('progress.reps')}${r.score === null ? '' : `, ${t('progress.formScore')} ${Math.round(r.score)}`}`,
          )
          .join('; ');
        return (
          <section key={p.enrollment.id}>
            <p>
              <strong>{t('progress.adherence')}:</strong> {Math.round(rate * 100)}%
            </p>
            <div className="meter" aria-hidden="true">
              <div className="meter-fill" style={{ width: `${Math.round(rate * 100)}%` }} />
            </div>
            {rows.length > 0 && (
              <svg className="chart" viewBox={`0 0 400 ${height}`} role="img" aria-label={`${t('progress.reps')}: ${summary}`}>
                {rows.map((r, i) => (
                  <g key={r.name + i} transform={`translate(0 ${i * barH + 4})`}>
                    <text x="0" y="16" className="chart-label">
                      {r.name.slice(0, 22)}
                    </text>
                    <rect x="150" y="4" height="16" rx="3" width={(200 * r.reps) / maxReps} className="chart-bar" />
                    <text x={156 + (200 * r.reps) / maxReps} y="17" className="chart-value">
                      {r.reps}
                    </text>
                  </g>
                ))}
              </svg>
            )}
            <table className="data-table">
              <caption className="visually-hidden">{t('progress.chart')}</caption>
              <thead>
                <tr>
                  <th scope="col">{t('session.exercises')}</th>
                  <th scope="col">{t('progress.reps')}</th>
                  <th scope="col">{t('progress.formScore')}</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((r, i) => (
                  <tr key={r.name + i}>
                    <th scope="row">{r.name}</th>
                    <td>{r.reps}</td>
                    <td>{r.score === null ? '–' : Math.round(r.score)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
        );
      })}
    </div>
  );
}
