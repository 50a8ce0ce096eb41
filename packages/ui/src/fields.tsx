import { type ReactElement, useId } from 'react';
import { useI18n } from './i18n/react.tsx';

/** One question of an intake or a form, as the API describes it (custom field types). */
export interface FieldSpec {
  key: string;
  label: string;
  field_type: string;
  options: string[];
  required: boolean;
}

/** An input for a field of any custom-field type, labelled, with its error announced. */
export function FieldInput({
  field,
  value,
  error,
  onChange,
}: {
  field: FieldSpec;
  value: unknown;
  error?: string | undefined;
  onChange: (v: unknown) => void;
}) {
  const { t } = useI18n();
  const id = useId();
  const errId = `${id}-err`;
  const common = {
    id,
    'aria-invalid': error ? true : undefined,
    'aria-describedby': error ? errId : undefined,
    'aria-required': field.required || undefined,
  } as const;
  const label = (
    <label htmlFor={id}>
      {field.label}
      {field.required && <span className="muted small"> ({t('book.required').toLowerCase()})</span>}
    </label>
  );
  let input: ReactElement;
  switch (field.field_type) {
    case 'boolean':
      return (
        <div className="field">
          <div className="checkbox">
            <input type="checkbox" {...common} checked={value === true} onChange={(e) => onChange(e.target.checked)} />
            {label}
          </div>
          {error && (
            <span className="field-error" id={errId}>
              {error}
            </span>
          )}
        </div>
      );
    case 'long_text':
      input = <textarea {...common} value={(value as string) ?? ''} onChange={(e) => onChange(e.target.value || null)} />;
      break;
    case 'number':
      input = (
        <input
          type="number"
          inputMode="decimal"
          {...common}
          value={value === null || value === undefined ? '' : String(value)}
          onChange={(e) => onChange(e.target.value === '' ? null : Number(e.target.value))}
        />
      );
      break;
    case 'date':
      input = <input type="date" {...common} value={(value as string) ?? ''} onChange={(e) => onChange(e.target.value || null)} />;
      break;
    case 'select':
      input = (
        <select {...common} value={(value as string) ?? ''} onChange={(e) => onChange(e.target.value || null)}>
          <option value="">{t('book.choose')}</option>
          {field.options.map((o) => (
            <option key={o} value={o}>
              {o}
            </option>
          ))}
        </select>
      );
      break;
    case 'multi_select':
      input = (
        <select
          multiple
          {...common}
          value={(value as string[]) ?? []}
          onChange={(e) => onChange([...e.target.selectedOptions].map((o) => o.value))}
        >
          {field.options.map((o) => (
            <option key={o} value={o}>
              {o}
            </option>
          ))}
        </select>
      );
      break;
    default:
      input = <input type="text" {...common} value={(value as string) ?? ''} onChange={(e) => onChange(e.target.value || null)} />;
  }
  return (
    <div className="field">
      {label}
      {input}
      {error && (
        <span className="field-error" id={errId}>
          {error}
        </span>
      )}
    </div>
  );
}
