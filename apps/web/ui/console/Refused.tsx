import { useI18n } from '@clinic/ui';

/** Signed in, not a superadmin: what the console is, why this person cannot use it, and a way out. */
export function Refused() {
  const { t } = useI18n();
  return (
    <section className="refused card" aria-labelledby="refused-title">
      <p className="refused-code">403</p>
      <h1 id="refused-title">{t('console.refused.title')}</h1>
      <p>{t('console.refused.body')}</p>
      <p className="muted">{t('console.refused.hint')}</p>
    </section>
  );
}
