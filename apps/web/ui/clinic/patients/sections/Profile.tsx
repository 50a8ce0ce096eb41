import { api, type FieldSpec, FieldInput, formatDay, isApiError, localeOf, Notice, Spinner, useI18n } from '@clinic/ui';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { type SectionProps, ServerError } from '../parts.tsx';

type Profile = Awaited<ReturnType<typeof api.getPatientProfile>>['data']['data'];
interface CustomField {
  key: string;
  label: string;
  field_type: string;
  options: string[];
}

/** The profile's own fields, in the order a clinic reads them; each a plain text input unless named here. */
const FIELDS = [
  'first_name',
  'last_name',
  'date_of_birth',
  'sex',
  'phone',
  'preferred_language',
  'external_record_number',
  'address_line1',
  'address_line2',
  'city',
  'region',
  'postal_code',
  'country',
] as const;
type FieldKey = (typeof FIELDS)[number];
const SEXES = ['female', 'male', 'other', 'unknown'] as const;

function shown(v: unknown, lang: 'en' | 'ro', t: (k: 'patients.yes' | 'patients.no') => string): string {
  if (v === null || v === undefined || v === '') return '—';
  if (typeof v === 'boolean') return t(v ? 'patients.yes' : 'patients.no');
  if (Array.isArray(v)) return v.join(', ');
  if (typeof v === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(v)) {
    const d = formatDay(v, lang, 'long');
    return `${d.day} ${d.month} ${v.slice(0, 4)}`;
  }
  return String(v);
}

/** A language tag or a country code as its name in the page's language ("ro" -> "Romanian"), else null. */
function named(k: FieldKey, v: unknown, lang: 'en' | 'ro'): string | null {
  if (typeof v !== 'string' || !v || (k !== 'preferred_language' && k !== 'country')) return null;
  try {
    return (
      new Intl.DisplayNames([localeOf(lang)], { type: k === 'country' ? 'region' : 'language' }).of(
        k === 'country' ? v.toUpperCase() : v,
      ) ?? v
    );
  } catch {
    return v;
  }
}

/** Profile and custom fields: read for everyone who opens the record, edited with patients.update_org (PUT, the whole profile). */
export function ProfileSection({ patientId, can }: SectionProps) {
  const { t, lang } = useI18n();
  const qc = useQueryClient();
  const profile = useQuery({
    queryKey: ['patient-profile', patientId],
    queryFn: async () => (await api.getPatientProfile({ params: { id: patientId } })).data.data,
  });
  const fields = useQuery({
    queryKey: ['custom-fields', 'patient'],
    queryFn: async () =>
      (await api.listCustomFields({ query: { entity_type: 'patient', published: 'true', limit: '200', sort: 'label' } })).data
        .data as CustomField[],
  });
  const [draft, setDraft] = useState<Profile | null>(null);
  const [saved, setSaved] = useState(false);
  const save = useMutation({
    mutationFn: async (p: Profile) => {
      const body: Record<string, unknown> = { custom_fields: p.custom_fields };
      for (const k of FIELDS) body[k] = p[k] ?? null;
      return (await api.updatePatientProfile({ params: { id: patientId }, body: body as never })).data.data;
    },
    onSuccess: (data) => {
      qc.setQueryData(['patient-profile', patientId], data);
      void qc.invalidateQueries({ queryKey: ['patient', patientId] });
      void qc.invalidateQueries({ queryKey: ['patients'] });
      setDraft(null);
      setSaved(true);
    },
  });

  if (profile.isPending) return <Spinner />;
  if (profile.isError) return <ServerError error={profile.error} />;
  const p = profile.data;
  const custom = fields.data ?? [];
  const label = (k: FieldKey) => t(`patients.profile.${k}` as 'patients.profile.first_name');
  const errs = save.error && isApiError(save.error) ? (save.error.fields ?? {}) : {};

  if (draft) {
    const set = (k: FieldKey, v: string) => setDraft({ ...draft, [k]: v === '' ? null : v });
    const submit = (e: FormEvent) => {
      e.preventDefault();
      save.mutate(draft);
    };
    return (
      <form className="card pr-card" onSubmit={submit} noValidate>
        <h2>{t('patients.profile.editTitle')}</h2>
        {save.isError && <ServerError error={save.error} />}
        <div className="pr-form-grid">
          {FIELDS.map((k) => {
            const id = `pf-${k}`;
            const err = errs[k] ?? errs[`body.${k}`];
            const value = (draft[k] as string | null) ?? '';
            return (
              <div className="field" key={k}>
                <label htmlFor={id}>{label(k)}</label>
                {k === 'sex' ? (
                  <select id={id} value={value} onChange={(e) => set(k, e.target.value)}>
                    <option value="">—</option>
                    {SEXES.map((s) => (
                      <option key={s} value={s}>
                        {t(`patients.sex.${s}`)}
                      </option>
                    ))}
                  </select>
                ) : (
                  <input
                    id={id}
                    type={k === 'date_of_birth' ? 'date' : k === 'phone' ? 'tel' : 'text'}
                    value={value}
                    aria-invalid={err ? true : undefined}
                    aria-describedby={err ? `${id}-err` : undefined}
                    onChange={(e) => set(k, e.target.value)}
                  />
                )}
                {err && (
                  <span className="field-error" id={`${id}-err`}>
                    {err}
                  </span>
                )}
              </div>
            );
          })}
        </div>
        {custom.length > 0 && (
          <fieldset className="plain pr-custom">
            <legend className="pr-legend">{t('patients.profile.custom')}</legend>
            <div className="pr-form-grid">
              {custom.map((f) => (
                <FieldInput
                  key={f.key}
                  field={{ ...f, required: false } satisfies FieldSpec}
                  value={draft.custom_fields[f.key] ?? null}
                  error={errs[`custom_fields.${f.key}`]}
                  onChange={(v) => setDraft({ ...draft, custom_fields: { ...draft.custom_fields, [f.key]: v } })}
                />
              ))}
            </div>
          </fieldset>
        )}
        <div className="button-row">
          <button type="submit" className="button" disabled={save.isPending}>
            {save.isPending ? t('patients.saving') : t('patients.save')}
          </button>
          <button type="button" className="button button-secondary" onClick={() => setDraft(null)}>
            {t('patients.cancel')}
          </button>
        </div>
      </form>
    );
  }

  return (
    <div className="stack">
      {saved && <Notice kind="success">{t('patients.profile.saved')}</Notice>}
      <div className="card pr-card">
        <div className="pr-card-head">
          <h2>{t('patients.profile.title')}</h2>
          {can('patients.update_org') && (
            <button
              type="button"
              className="button button-secondary"
              onClick={() => {
                setSaved(false);
                save.reset();
                setDraft(p);
              }}
            >
              {t('patients.edit')}
            </button>
          )}
        </div>
        <dl className="pr-dl">
          {FIELDS.filter((k) => k !== 'first_name' && k !== 'last_name').map((k) => (
            <div key={k}>
              <dt>{label(k)}</dt>
              <dd>{k === 'sex' && p.sex ? t(`patients.sex.${p.sex}`) : (named(k, p[k], lang) ?? shown(p[k], lang, t))}</dd>
            </div>
          ))}
          <div>
            <dt>{t('patients.profile.email')}</dt>
            <dd>{p.email ?? '—'}</dd>
          </div>
        </dl>
      </div>
      <div className="card pr-card">
        <h2>{t('patients.profile.custom')}</h2>
        {fields.isError ? (
          <ServerError error={fields.error} />
        ) : custom.length === 0 ? (
          <p className="muted">{t('patients.profile.noCustom')}</p>
        ) : (
          <dl className="pr-dl">
            {custom.map((f) => (
              <div key={f.key}>
                <dt>{f.label}</dt>
                <dd>{shown(p.custom_fields[f.key], lang, t)}</dd>
              </div>
            ))}
          </dl>
        )}
      </div>
    </div>
  );
}
