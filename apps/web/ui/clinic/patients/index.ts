import type { Screen } from '../screens.tsx';
import { PatientRecord } from './PatientRecord.tsx';
import { PatientsList } from './PatientsList.tsx';

/** The Patients area's screens (spread into the registry): the list, and the record behind it (not in the navigation). */
const READ = ['patients.view_org', 'patients.view'];
export const patientScreens: readonly Screen[] = [
  { path: '/clinic/patients', area: 'patients', titleKey: 'clinic.area.patients', anyOf: READ, component: PatientsList },
  { path: '/clinic/patients/:id', area: 'patients', titleKey: 'patients.record.title', anyOf: READ, component: PatientRecord, nav: false },
];
