import type { clinicEn } from './clinic-en.ts';

/** Mesajele aplicației clinicii: aceleași chei ca în clinic-en.ts. */
export const clinicRo: Record<keyof typeof clinicEn, string> = {
  'clinic.title': 'Clinică',
  'clinic.nav': 'Secțiunile clinicii',
  'clinic.area.calendar': 'Calendar',
  'clinic.area.patients': 'Pacienți',
  'clinic.area.care': 'Conținut clinic',
  'clinic.area.engagement': 'Comunicare',
  'clinic.area.settings': 'Setări',
  'clinic.noAccess.title': 'Nu aveți acces la această clinică',
  'clinic.noAccess.body':
    'Sunteți autentificat ca {email}, dar nu faceți parte din echipa {clinic}. Accesul personalului vine cu calitatea de membru: cereți administratorului clinicii să vă adauge sau autentificați-vă cu alt cont.',
  'clinic.noAccess.portal': 'Sunteți pacient aici? Mergeți la contul dumneavoastră',
  'clinic.nothing.title': 'Nimic de afișat deocamdată',
  'clinic.nothing.body':
    'Rolul dumneavoastră la {clinic} nu include niciun ecran al acestei aplicații. Cereți administratorului clinicii accesul de care aveți nevoie.',
  'clinic.notFound.title': 'Pagina nu există',
  'clinic.notFound.body': 'Nu există niciun ecran la această adresă sau rolul dumneavoastră nu îl include.',
  'clinic.notFound.home': 'Mergeți la început',
};
