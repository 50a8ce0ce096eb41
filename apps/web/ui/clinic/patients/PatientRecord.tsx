import { api, Link, type MessageKey, navigate, Spinner, useI18n, useLocation } from '@clinic/ui';
import { useQuery } from '@tanstack/react-query';
import { type ComponentType, type KeyboardEvent, useRef } from 'react';
import { allowed, type Gate } from '../access.ts';
import type { ScreenProps } from '../screen-props.ts';
import { fullName, type SectionProps, ServerError } from './parts.tsx';
import { AccessLogSection } from './sections/AccessLog.tsx';
import { AppointmentsSection } from './sections/Appointments.tsx';
import { CaregiversSection } from './sections/Caregivers.tsx';
import { ConsentsSection } from './sections/Consents.tsx';
import { DocumentsSection } from './sections/Documents.tsx';
import { FormsSection } from './sections/Forms.tsx';
import { PlansSection } from './sections/Plans.tsx';
import { ProfileSection } from './sections/Profile.tsx';
import './patients.css';

/**
 * The record's sections, each with the permission codes of which the caller needs one (the same codes the
 * server checks on the routes the section reads); a section the caller may not read is not shown at all.
 */
interface Section extends Gate {
  id: string;
  label: MessageKey;
  component: ComponentType<SectionProps>;
}
const SECTIONS: readonly Section[] = [
  { id: 'profile', label: 'patients.tab.profile', anyOf: ['patients.view_org', 'patients.view'], component: ProfileSection },
  {
    id: 'appointments',
    label: 'patients.tab.appointments',
    anyOf: ['appointments.view_org', 'appointments.view_own'],
    component: AppointmentsSection,
  },
  { id: 'consents', label: 'patients.tab.consents', anyOf: ['consents.view_org'], component: ConsentsSection },
  { id: 'forms', label: 'patients.tab.forms', anyOf: ['forms.view_org'], component: FormsSection },
  { id: 'documents', label: 'patients.tab.documents', anyOf: ['documents.view_org'], component: DocumentsSection },
  { id: 'caregivers', label: 'patients.tab.caregivers', anyOf: ['patients.view_org'], component: CaregiversSection },
  {
    id: 'plans',
    label: 'patients.tab.plans',
    anyOf: ['treatment_plans.view_org', 'treatment_plans.assign', 'telemetry.view_org'],
    component: PlansSection,
  },
  { id: 'access', label: 'patients.tab.access', anyOf: ['audit_log.view_org'], component: AccessLogSection },
];

function age(dob: string | null): number | null {
  if (!dob) return null;
  const [y, m, d] = dob.split('-').map(Number) as [number, number, number];
  const now = new Date();
  let a = now.getFullYear() - y;
  if (now.getMonth() + 1 < m || (now.getMonth() + 1 === m && now.getDate() < d)) a--;
  return a;
}

/** The patient record (/clinic/patients/:id): a header that names the person, then one tab per section the caller may read. */
export function PatientRecord(props: ScreenProps) {
  const { t } = useI18n();
  const id = props.params.id ?? '';
  const { search } = useLocation();
  const sections = SECTIONS.filter((s) => allowed(s, props.me.permissions));
  const wanted = search.get('tab');
  const current = sections.find((s) => s.id === wanted) ?? sections[0];
  const tabs = useRef<(HTMLButtonElement | null)[]>([]);
  const patient = useQuery({
    queryKey: ['patient', id],
    queryFn: async () => (await api.getPatient({ params: { id } })).data.data,
  });

  const select = (s: Section, focus = false) => {
    navigate(`/clinic/patients/${id}${s === sections[0] ? '' : `?tab=${s.id}`}`, { replace: true });
    if (focus) tabs.current[sections.indexOf(s)]?.focus();
  };
  const onKey = (e: KeyboardEvent) => {
    if (!current) return;
    const i = sections.indexOf(current);
    const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: sections.length - 1 }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    select(sections[(to + sections.length) % sections.length]!, true);
  };

  if (patient.isPending) return <Spinner />;
  const back = (
    <p className="pr-back">
      <Link to="/clinic/patients" className="pr-back-link">
        ← {t('patients.record.back')}
      </Link>
    </p>
  );
  if (patient.isError)
    return (
      <div>
        {back}
        <ServerError error={patient.error} />
      </div>
    );
  const p = patient.data;
  const years = age(p.date_of_birth);
  const Body = current?.component;
  return (
    <div className="patient-record">
      {back}
      <header className="pr-header card">
        <span className="pr-avatar" aria-hidden="true">
          {`${p.first_name?.[0] ?? ''}${p.last_name?.[0] ?? ''}`.toUpperCase() || '?'}
        </span>
        <div className="pr-id">
          <h1>{fullName(p)}</h1>
          <ul className="pr-facts">
            {years !== null && <li>{t('patients.record.age', { n: years })}</li>}
            {p.email && <li>{p.email}</li>}
            {p.phone && <li>{p.phone}</li>}
          </ul>
        </div>
      </header>
      <div className="tabs pr-tabs" role="tablist" aria-label={t('patients.record.sections')} onKeyDown={onKey}>
        {sections.map((s, i) => (
          <button
            key={s.id}
            ref={(el) => {
              tabs.current[i] = el;
            }}
            type="button"
            role="tab"
            id={`tab-${s.id}`}
            aria-controls={`panel-${s.id}`}
            aria-selected={s === current}
            tabIndex={s === current ? 0 : -1}
            className="tab"
            onClick={() => select(s)}
          >
            {t(s.label)}
          </button>
        ))}
      </div>
      {current && Body && (
        <section role="tabpanel" id={`panel-${current.id}`} aria-labelledby={`tab-${current.id}`} className="pr-panel" tabIndex={-1}>
          <Body {...props} patientId={id} />
        </section>
      )}
    </div>
  );
}
