import { api, formatDay, Link, navigate, useI18n, useLocation, useVirtualWindow } from '@clinic/ui';
import { keepPreviousData, useQueries } from '@tanstack/react-query';
import { type KeyboardEvent, type MouseEvent, useEffect, useId, useRef, useState } from 'react';
import type { ScreenProps } from '../screen-props.ts';
import { fullName, ServerError } from './parts.tsx';
import './patients.css';

/** Rows per request: the server's pages (spec 4.1, offset pages); a screen holds about 15, so one page covers several. */
const PAGE = 100;
const ROW_H = 52;
const HEAD_H = 44;
const SORTS = ['last_name', 'first_name', '-created_at', 'created_at'] as const;
type SortKey = (typeof SORTS)[number];

export interface PatientRow {
  id: string;
  first_name: string | null;
  last_name: string | null;
  email: string | null;
  phone: string | null;
  date_of_birth: string | null;
  created_at: string;
}

function initials(p: PatientRow): string {
  const s = `${p.first_name?.[0] ?? ''}${p.last_name?.[0] ?? ''}`;
  return (s || p.email?.[0] || '?').toUpperCase();
}

/** The filters live in the address (?q=&sort=&from=&to=), so a list can be linked and Back returns to it. */
function useFilters() {
  const { search } = useLocation();
  const q = search.get('q') ?? '';
  const sortRaw = search.get('sort') ?? 'last_name';
  const sort: SortKey = (SORTS as readonly string[]).includes(sortRaw) ? (sortRaw as SortKey) : 'last_name';
  const from = search.get('from') ?? '';
  const to = search.get('to') ?? '';
  const set = (next: Partial<{ q: string; sort: string; from: string; to: string }>) => {
    const s = new URLSearchParams({ q, sort, from, to, ...next });
    for (const k of [...s.keys()]) if (!s.get(k) || (k === 'sort' && s.get(k) === 'last_name')) s.delete(k);
    const qs = s.toString();
    navigate(`/clinic/patients${qs ? `?${qs}` : ''}`, { replace: true });
  };
  return { q, sort, from, to, set };
}

/**
 * The patients list: the server's pages fetched as the window scrolls over them (only the pages in view,
 * one page either side; the second half from the end in the reversed sort), rows windowed, the exact total
 * from the first page's `pagination.total`.
 * Keyboard: the grid is one tab stop; arrows, Page Up/Down, Home/End move the active row, Enter opens it.
 */
export function PatientsList(_props: ScreenProps) {
  const { t, lang } = useI18n();
  const f = useFilters();
  const [text, setText] = useState(f.q);
  useEffect(() => setText(f.q), [f.q]);
  const setRef = useRef(f.set);
  setRef.current = f.set;
  useEffect(() => {
    // Searching waits for a pause in typing: one request per word, not per key.
    if (text.trim() === f.q) return;
    const timer = setTimeout(() => setRef.current({ q: text.trim() }), 250);
    return () => clearTimeout(timer);
  }, [text, f.q]);

  const scrollRef = useRef<HTMLDivElement>(null);
  const [total, setTotal] = useState<number | null>(null);
  const count = total ?? 0;
  const win = useVirtualWindow({ scrollRef, count, rowHeight: ROW_H, headerHeight: HEAD_H });
  // Where row i lives: rows of the first half in the sort's pages, rows of the second half in the pages of the
  // reversed sort counted from the end, so no read skips more than half the list (End costs what page 1 costs).
  const locate = (i: number): { key: string; rev: boolean; page: number; at: number } => {
    const rev = count > 0 && i >= Math.ceil(count / 2);
    const r = rev ? count - 1 - i : i;
    const page = Math.floor(r / PAGE) + 1;
    return { key: `${rev ? 'r' : 'f'}${page}`, rev, page, at: r % PAGE };
  };
  const from = Math.max(0, win.start - PAGE);
  const to = Math.min(count, win.end + PAGE);
  const wanted = new Map<string, { rev: boolean; page: number }>([['f1', { rev: false, page: 1 }]]);
  for (let i = from; i < to; i++) {
    const l = locate(i);
    if (!wanted.has(l.key)) wanted.set(l.key, l);
  }
  const pages = [...wanted.entries()];
  const filterKey = [f.q, f.sort, f.from, f.to];
  const results = useQueries({
    queries: pages.map(([key, { rev, page }]) => ({
      queryKey: ['patients', ...filterKey, key],
      queryFn: async () => {
        const sort = rev ? (f.sort.startsWith('-') ? f.sort.slice(1) : `-${f.sort}`) : f.sort;
        const query: Record<string, string> = { page: String(page), limit: String(PAGE), sort };
        if (f.q) query.q = f.q;
        if (f.from) query.created_at_after = f.from;
        if (f.to) query.created_at_before = f.to;
        return (await api.listPatients({ query })).data;
      },
      // A new search keeps the previous rows on screen until its first page arrives: no blank flash.
      placeholderData: key === 'f1' ? keepPreviousData : undefined,
      staleTime: 30_000,
    })),
  });
  const head = results[0]!;
  const headTotal = head.data?.pagination.total;
  useEffect(() => {
    if (headTotal !== undefined) setTotal(headTotal);
  }, [headTotal]);
  const rowsByPage = new Map<string, PatientRow[]>();
  pages.forEach(([key], i) => {
    const d = results[i]?.data;
    if (d) rowsByPage.set(key, d.data as PatientRow[]);
  });
  const rowAt = (i: number): PatientRow | undefined => {
    const l = locate(i);
    return rowsByPage.get(l.key)?.[l.at];
  };

  // Keyboard: the active row (aria-activedescendant) moves; the focus stays on the grid.
  const [active, setActive] = useState(0);
  useEffect(() => setActive(0), [f.q, f.sort, f.from, f.to]);
  const gridId = useId();
  const rowId = (i: number) => `${gridId}-row-${i}`;
  const move = (to: number) => {
    const i = Math.max(0, Math.min(count - 1, to));
    setActive(i);
    win.scrollToIndex(i);
  };
  const pageRows = Math.max(1, Math.floor(((scrollRef.current?.clientHeight ?? 600) - HEAD_H) / ROW_H));
  const onKey = (e: KeyboardEvent<HTMLTableElement>) => {
    if (!count) return;
    const keys: Record<string, () => void> = {
      ArrowDown: () => move(active + 1),
      ArrowUp: () => move(active - 1),
      PageDown: () => move(active + pageRows),
      PageUp: () => move(active - pageRows),
      Home: () => move(0),
      End: () => move(count - 1),
      Enter: () => {
        const row = rowAt(active);
        if (row) navigate(`/clinic/patients/${row.id}`);
      },
    };
    const run = keys[e.key];
    if (run) {
      e.preventDefault();
      run();
    }
  };

  const fmtDob = (d: string | null) => {
    if (!d) return '—';
    const x = formatDay(d, lang, 'short');
    return `${x.day} ${x.month} ${d.slice(0, 4)}`;
  };
  const numberFmt = new Intl.NumberFormat(lang === 'ro' ? 'ro-RO' : 'en-GB');
  const searching = head.isFetching && head.isPlaceholderData;
  const rows = [];
  for (let i = win.start; i < win.end; i++) {
    const p = rowAt(i);
    rows.push(
      <tr
        key={i}
        id={rowId(i)}
        data-index={i}
        aria-rowindex={i + 2}
        aria-selected={i === active}
        className={`pl-row${i === active ? ' pl-row-active' : ''}${i % 2 ? ' pl-row-odd' : ''}`}
        style={{ transform: `translateY(${i * ROW_H}px)` }}
      >
        {p ? (
          <>
            <td className="pl-cell pl-name">
              <span className="pl-avatar" aria-hidden="true">
                {initials(p)}
              </span>
              <Link to={`/clinic/patients/${p.id}`} tabIndex={-1}>
                {fullName(p)}
              </Link>
            </td>
            <td className="pl-cell pl-dob">{fmtDob(p.date_of_birth)}</td>
            <td className="pl-cell pl-email">{p.email ?? '—'}</td>
            <td className="pl-cell pl-phone">{p.phone ?? '—'}</td>
          </>
        ) : (
          <td className="pl-cell pl-skeleton" colSpan={4}>
            <span className="visually-hidden">{t('app.loading')}</span>
            <span className="pl-bar" aria-hidden="true" />
          </td>
        )}
      </tr>,
    );
  }
  // One click handler for every row (the table's), so a row needs no handler of its own.
  const onClick = (e: MouseEvent<HTMLTableElement>) => {
    const tr = (e.target as HTMLElement).closest<HTMLElement>('tr[data-index]');
    if (!tr || e.defaultPrevented) return;
    const i = Number(tr.dataset.index);
    setActive(i);
    const row = rowAt(i);
    if (row && !(e.target as HTMLElement).closest('a')) navigate(`/clinic/patients/${row.id}`);
  };

  return (
    <div className="patients">
      <div className="page-head pl-head">
        <div>
          <h1>{t('clinic.area.patients')}</h1>
          <p className="pl-total" aria-live="polite">
            {total === null ? t('app.loading') : t(f.q ? 'patients.list.found' : 'patients.list.total', { n: numberFmt.format(total) })}
          </p>
        </div>
        <p className="muted small pl-hint">{t('patients.list.keyboardHint')}</p>
      </div>
      <form className="pl-filters card" aria-label={t('patients.list.filters')} onSubmit={(e) => e.preventDefault()}>
        <div className="field pl-search">
          <label htmlFor="pl-q">{t('patients.list.search')}</label>
          <input
            id="pl-q"
            type="search"
            value={text}
            placeholder={t('patients.list.searchHint')}
            onChange={(e) => setText(e.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor="pl-sort">{t('patients.list.sort')}</label>
          <select id="pl-sort" value={f.sort} onChange={(e) => f.set({ sort: e.target.value })}>
            {SORTS.map((s) => (
              <option key={s} value={s}>
                {t(`patients.sort.${s.replace('-', 'desc_')}` as 'patients.sort.last_name')}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="pl-from">{t('patients.list.createdFrom')}</label>
          <input id="pl-from" type="date" value={f.from} onChange={(e) => f.set({ from: e.target.value })} />
        </div>
        <div className="field">
          <label htmlFor="pl-to">{t('patients.list.createdTo')}</label>
          <input id="pl-to" type="date" value={f.to} onChange={(e) => f.set({ to: e.target.value })} />
        </div>
        {(f.q || f.from || f.to) && (
          <button
            type="button"
            className="button button-secondary pl-clear"
            onClick={() => {
              setText('');
              f.set({ q: '', from: '', to: '' });
            }}
          >
            {t('patients.list.clear')}
          </button>
        )}
      </form>
      {head.isError ? (
        <ServerError error={head.error} />
      ) : total === 0 ? (
        <div className="card pl-empty">
          <h2>{t('patients.list.none')}</h2>
          <p className="muted">{f.q ? t('patients.list.noneFor', { q: f.q }) : t('patients.list.noneYet')}</p>
        </div>
      ) : (
        <div ref={scrollRef} className={`pl-scroll card${searching ? ' pl-stale' : ''}`}>
          <table
            className="pl-grid"
            // biome-ignore lint/a11y/noNoninteractiveElementToInteractiveRole: a grid (not a plain table): one tab stop, arrows move the active row
            role="grid"
            aria-label={t('clinic.area.patients')}
            aria-rowcount={count + 1}
            aria-colcount={4}
            aria-busy={head.isPending || undefined}
            tabIndex={0}
            aria-activedescendant={count ? rowId(active) : undefined}
            onKeyDown={onKey}
            onClick={onClick}
          >
            <thead className="pl-header">
              <tr aria-rowindex={1} className="pl-row pl-row-head">
                <th scope="col" className="pl-cell pl-name">
                  {t('patients.col.name')}
                </th>
                <th scope="col" className="pl-cell pl-dob">
                  {t('patients.col.dob')}
                </th>
                <th scope="col" className="pl-cell pl-email">
                  {t('patients.col.email')}
                </th>
                <th scope="col" className="pl-cell pl-phone">
                  {t('patients.col.phone')}
                </th>
              </tr>
            </thead>
            <tbody className="pl-body" style={{ height: win.totalHeight }}>
              {rows}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
