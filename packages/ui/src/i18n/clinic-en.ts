/** The clinic app's messages (staff, /clinic): spread into en.ts; every key must be in clinic-ro.ts too. */
export const clinicEn = {
  'clinic.title': 'Clinic',
  'clinic.nav': 'Clinic areas',
  'clinic.area.calendar': 'Calendar',
  'clinic.area.patients': 'Patients',
  'clinic.area.care': 'Care content',
  'clinic.area.engagement': 'Engagement',
  'clinic.area.settings': 'Settings',
  'clinic.noAccess.title': 'No access to this clinic',
  'clinic.noAccess.body':
    'You are signed in as {email}, but you are not on the team of {clinic}. Staff access comes with a membership: ask the clinic’s administrator to add you, or sign in with another account.',
  'clinic.noAccess.portal': 'Are you a patient here? Go to your account',
  'clinic.nothing.title': 'Nothing to show yet',
  'clinic.nothing.body':
    'Your role at {clinic} does not include any of this app’s screens. Ask the clinic’s administrator for the access you need.',
  'clinic.notFound.title': 'Page not found',
  'clinic.notFound.body': 'There is no screen at this address, or your role does not include it.',
  'clinic.notFound.home': 'Go to the start',
} as const;
