/**
 * Message templates: text per language with {{placeholders}} from a fixed list. A template is checked when
 * it is saved (every placeholder known, every language a BCP 47 tag, the parts its channel needs), and
 * rendered at send time with the values of one target: HTML parts get the values escaped, text parts and
 * subjects get them as they are (a subject loses line breaks: no header can be injected through a name).
 */
import { canonicalLanguage } from '../../platform/locale.ts';

export type Channel = 'email' | 'sms';

export interface TemplateParts {
  subject?: string;
  text: string;
  html?: string;
}

export type TemplateContent = Record<string, TemplateParts>;

/** The placeholders a template may use; each is documented in docs/automations.md. */
export const PLACEHOLDERS = [
  'patient.first_name',
  'patient.last_name',
  'patient.full_name',
  'organization.name',
  'appointment.date',
  'appointment.time',
  'appointment.starts_at',
  'appointment.service',
  'appointment.specialist',
  'appointment.location',
  'appointment.timezone',
] as const;
export type Placeholder = (typeof PLACEHOLDERS)[number];
export type Values = Partial<Record<Placeholder, string>>;

const KNOWN = new Set<string>(PLACEHOLDERS);
const PLACEHOLDER = /\{\{\s*([^{}\s]*)\s*\}\}/g;
const LIMITS = { subject: 300, text: 10_000, html: 50_000, smsText: 1_600 };

/** Problems of a template's content, keyed like the request body (`content.en.subject`); empty when fine. */
export function contentProblems(channel: Channel, content: Record<string, unknown>): Record<string, string> {
  const problems: Record<string, string> = {};
  const languages = Object.keys(content);
  if (!languages.length) problems.content = 'give the text of at least one language';
  if (languages.length > 30) problems.content = 'at most 30 languages';
  for (const lang of languages) {
    const at = `content.${lang}`;
    if (canonicalLanguage(lang) !== lang) {
      problems[at] = `"${lang}" is not a BCP 47 language tag in its canonical form (such as en, ro, en-GB)`;
      continue;
    }
    const parts = content[lang];
    if (typeof parts !== 'object' || parts === null || Array.isArray(parts)) {
      problems[at] = 'must be an object with text (and subject, html for email)';
      continue;
    }
    const p = parts as Record<string, unknown>;
    const allowed = channel === 'email' ? ['subject', 'text', 'html'] : ['text'];
    for (const k of Object.keys(p))
      if (!allowed.includes(k)) problems[`${at}.${k}`] = `not a part of ${channel} templates (${allowed.join(', ')})`;
    if (typeof p.text !== 'string' || !p.text.trim()) problems[`${at}.text`] = 'required, non-empty text';
    if (channel === 'email' && (typeof p.subject !== 'string' || !p.subject.trim())) problems[`${at}.subject`] = 'required for email';
    if (p.html !== undefined && typeof p.html !== 'string') problems[`${at}.html`] = 'must be text (HTML)';
    for (const key of allowed) {
      const v = p[key];
      if (typeof v !== 'string') continue;
      const max = key === 'text' && channel === 'sms' ? LIMITS.smsText : LIMITS[key as 'subject' | 'text' | 'html'];
      if (v.length > max) problems[`${at}.${key}`] = `at most ${max} characters`;
      const unknown = [...v.matchAll(PLACEHOLDER)].map((m) => m[1]!).filter((name) => !KNOWN.has(name));
      if (unknown.length)
        problems[`${at}.${key}`] = `unknown placeholder ${unknown.map((u) => `{{${u}}}`).join(', ')}; known: ${PLACEHOLDERS.join(', ')}`;
    }
  }
  return problems;
}

/**
 * The language a target reads: its preferred language, else the organization's; each tried as given and
 * by its primary subtag (en-GB finds en); else the first language the template has.
 */
export function chooseLanguage(content: TemplateContent, preferred: (string | null | undefined)[]): string {
  const available = Object.keys(content);
  for (const want of preferred) {
    if (!want) continue;
    if (content[want]) return want;
    const primary = want.split('-')[0]!.toLowerCase();
    const match = available.find((l) => l.toLowerCase() === primary) ?? available.find((l) => l.split('-')[0]!.toLowerCase() === primary);
    if (match) return match;
  }
  return available[0]!;
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);

function fill(text: string, values: Values, encode: (s: string) => string): string {
  return text.replace(PLACEHOLDER, (_m, name: string) => encode(values[name as Placeholder] ?? ''));
}

export interface Rendered {
  language: string;
  subject: string | null;
  text: string;
  html: string | null;
}

export function render(content: TemplateContent, language: string, values: Values): Rendered {
  const parts = content[language]!;
  return {
    language,
    subject:
      parts.subject === undefined
        ? null
        : fill(parts.subject, values, (s) => s)
            .replace(/[\r\n\t]+/g, ' ')
            .trim(),
    text: fill(parts.text, values, (s) => s),
    html: parts.html === undefined ? null : fill(parts.html, values, escapeHtml),
  };
}

/** Sample values for a test send (POST /v1/message-templates/{id}/test). */
export const SAMPLE_VALUES: Values = {
  'patient.first_name': 'Ana',
  'patient.last_name': 'Example',
  'patient.full_name': 'Ana Example',
  'appointment.date': '2030-01-15',
  'appointment.time': '09:30',
  'appointment.starts_at': '2030-01-15 09:30',
  'appointment.service': 'Consultation',
  'appointment.specialist': 'Dr. Example',
  'appointment.location': 'Main clinic',
  'appointment.timezone': 'UTC',
};
