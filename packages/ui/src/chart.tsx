import { useId } from 'react';
import { useI18n } from './i18n/react.tsx';

export interface TrendPoint {
  /** The x label (a date, a session). */
  label: string;
  value: number | null;
}

/**
 * A small line chart of one measure over time, for people and for assistive technology alike: the SVG is an
 * image named by a one-sentence summary (first, last, lowest, highest), and the same points are a table
 * under "Show the data" (WCAG 1.1.1: the text alternative carries every value). Missing values break the line.
 */
export function TrendChart({
  title,
  points,
  max,
  unit = '',
  width = 520,
  height = 160,
}: {
  title: string;
  points: readonly TrendPoint[];
  /** The top of the y axis (e.g. 100 for a score); default: the largest value. */
  max?: number;
  unit?: string;
  width?: number;
  height?: number;
}) {
  const { t } = useI18n();
  const id = useId();
  const values = points.flatMap((p) => (p.value === null ? [] : [p.value]));
  const top = Math.max(1, max ?? Math.max(...values, 0));
  const pad = { l: 36, r: 12, t: 12, b: 28 };
  const w = width - pad.l - pad.r;
  const h = height - pad.t - pad.b;
  const x = (i: number) => pad.l + (points.length <= 1 ? w / 2 : (i * w) / (points.length - 1));
  const y = (v: number) => pad.t + h - (v / top) * h;
  const segments: string[] = [];
  let d = '';
  points.forEach((p, i) => {
    if (p.value === null) {
      if (d) segments.push(d);
      d = '';
      return;
    }
    d += `${d ? 'L' : 'M'}${x(i).toFixed(1)} ${y(p.value).toFixed(1)}`;
  });
  if (d) segments.push(d);
  const fmt = (v: number) => `${Math.round(v * 10) / 10}${unit}`;
  const summary = values.length
    ? t('chart.summary', {
        title,
        n: values.length,
        first: fmt(values[0]!),
        last: fmt(values[values.length - 1]!),
        min: fmt(Math.min(...values)),
        max: fmt(Math.max(...values)),
      })
    : t('chart.empty', { title });
  const ticks = [0, top / 2, top];
  const labelEvery = Math.max(1, Math.ceil(points.length / 6));
  // Two sessions may share a day: the position makes each point's key unique.
  const keyed = points.map((p, i) => ({ ...p, i, key: `${i}:${p.label}` }));
  return (
    <figure className="trend">
      <figcaption className="trend-title">{title}</figcaption>
      <svg className="trend-svg" viewBox={`0 0 ${width} ${height}`} role="img" aria-labelledby={`${id}-s`}>
        <title id={`${id}-s`}>{summary}</title>
        {ticks.map((v) => (
          <g key={v}>
            <line x1={pad.l} x2={width - pad.r} y1={y(v)} y2={y(v)} className="trend-grid" />
            <text x={pad.l - 6} y={y(v) + 4} className="trend-axis" textAnchor="end">
              {Math.round(v)}
            </text>
          </g>
        ))}
        {keyed.map((p) =>
          p.i % labelEvery === 0 || p.i === points.length - 1 ? (
            <text key={p.key} x={x(p.i)} y={height - 8} className="trend-axis" textAnchor="middle">
              {p.label}
            </text>
          ) : null,
        )}
        {segments.map((s) => (
          <path key={s} d={s} className="trend-line" />
        ))}
        {keyed.map((p) => (p.value === null ? null : <circle key={p.key} cx={x(p.i)} cy={y(p.value)} r={3.5} className="trend-dot" />))}
      </svg>
      <details className="trend-data">
        <summary>{t('chart.showData')}</summary>
        <table className="data-table">
          <caption className="visually-hidden">{title}</caption>
          <thead>
            <tr>
              <th scope="col">{t('chart.when')}</th>
              <th scope="col">{title}</th>
            </tr>
          </thead>
          <tbody>
            {keyed.map((p) => (
              <tr key={p.key}>
                <th scope="row">{p.label}</th>
                <td>{p.value === null ? '–' : fmt(p.value)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}
