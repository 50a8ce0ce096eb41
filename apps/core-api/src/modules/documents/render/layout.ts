/*
 * The template language of PDF templates (docs/documents.md): a list of blocks whose texts may hold
 * placeholders `{{path}}` bound to the data model of the template's kind. Templates are data, not code:
 * the one Typst program (program.typ) lays out the resolved blocks, and every text, the clinic's and the
 * patient's alike, reaches it as a plain string. Nothing a template or a patient writes can change the
 * layout, read a file or loop.
 */

export const KINDS = ['form', 'visit_summary', 'prescription', 'report', 'receipt'] as const;
export type Kind = (typeof KINDS)[number];

export type Block =
  | { type: 'heading'; text: string; level?: 1 | 2 | 3 }
  | { type: 'text'; text: string; size?: 'small' | 'normal' | 'large'; bold?: boolean; align?: 'left' | 'center' | 'right' }
  | { type: 'fields'; rows: { label: string; value: string }[] }
  | { type: 'answers'; question_label?: string; answer_label?: string }
  | { type: 'items'; columns: { key: string; label: string; width?: number }[] }
  | { type: 'signature' }
  | { type: 'page_break' }
  | { type: 'divider' }
  | { type: 'spacer'; size?: 'small' | 'medium' | 'large' };

/** What a template version holds besides its name and description. */
export interface Layout {
  page: { size: 'A4' | 'Letter'; orientation: 'portrait' | 'landscape' };
  letterhead: boolean;
  /** Left part of every page's footer (the page number is on the right). */
  footer: string;
  blocks: Block[];
}

/** The placeholders of every kind, then the ones of form documents and of appointment documents. */
const COMMON: Record<string, string> = {
  'organization.name': "The letterhead's name (or the organization's name)",
  'organization.address': "The letterhead's address lines, on one line",
  'organization.registration_numbers': "The letterhead's registration numbers, on one line",
  'patient.full_name': 'First and last name',
  'patient.first_name': 'First name',
  'patient.last_name': 'Last name',
  'patient.date_of_birth': 'YYYY-MM-DD, or empty',
  'patient.record_number': 'The external record number, or empty',
  'document.title': "The document's title",
  'document.id': "The document's id",
  'document.date': 'The date it was rendered (YYYY-MM-DD, UTC)',
};
const FORM: Record<string, string> = {
  'form.title': "The form's title (its template version's name)",
  'form.status': 'pending or signed',
  'form.created_at': 'When the form was created (YYYY-MM-DD HH:MM UTC)',
  'form.template_version': 'The form template version it was made from',
  'signature.status': '"Signed" or "Not signed"',
  'signature.signed_by': 'Who signed: the patient, or the staff member',
  'signature.signed_at': 'When (YYYY-MM-DD HH:MM:SS UTC), or empty',
  'signature.sha256': "SHA-256 of the form's snapshot (docs/documents.md)",
};
const APPOINTMENT: Record<string, string> = {
  'appointment.date': 'The day of the visit in its location time zone (YYYY-MM-DD)',
  'appointment.time': 'Start and end (HH:MM-HH:MM) in that zone',
  'appointment.time_zone': 'The IANA zone of those times',
  'appointment.service': 'The service name',
  'appointment.location': 'The location name, or "Video visit" / "Phone call"',
  'specialist.display_name': "The specialist's display name",
  'specialist.title': "The specialist's title, or empty",
  'specialist.registration_number': "The specialist's registration number, or empty",
  'document.body': 'The text staff wrote for this document',
};

export function placeholdersOf(kind: Kind): Record<string, string> {
  return { ...COMMON, ...(kind === 'form' ? FORM : APPOINTMENT) };
}

/** Every placeholder with the kinds that have it (GET /v1/pdf-templates/placeholders). */
export function placeholderCatalog(): { path: string; description: string; kinds: Kind[] }[] {
  const rows = new Map<string, { path: string; description: string; kinds: Kind[] }>();
  for (const kind of KINDS) {
    for (const [path, description] of Object.entries(placeholdersOf(kind))) {
      const row = rows.get(path) ?? { path, description, kinds: [] };
      row.kinds.push(kind);
      rows.set(path, row);
    }
  }
  return [...rows.values()];
}

const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;
const PATH = /^[a-z_]+(\.[a-z_0-9]+)+$/;

/** Problems of a text's placeholders: an unknown path, or braces that are not a placeholder. */
function textProblems(text: string, known: Record<string, string>): string[] {
  const problems: string[] = [];
  for (const m of text.matchAll(PLACEHOLDER)) {
    const path = m[1]!;
    if (!PATH.test(path) || !(path in known)) problems.push(`unknown placeholder {{${path.slice(0, 60)}}}`);
  }
  const rest = text.replace(PLACEHOLDER, '');
  if (rest.includes('{{') || rest.includes('}}')) problems.push('"{{" or "}}" outside a placeholder');
  return problems;
}

/**
 * What is wrong with a layout for a kind, by JSON path (`blocks[3].text`): placeholders the kind's data
 * model lacks, blocks the kind cannot fill (answers and the signature are a form's, items an appointment
 * document's), item columns repeated. Empty when it can be published.
 */
export function layoutProblems(kind: Kind, layout: Layout): Record<string, string> {
  const known = placeholdersOf(kind);
  const out: Record<string, string> = {};
  const check = (where: string, text: string) => {
    const p = textProblems(text, known);
    if (p.length) out[where] = p.join('; ');
  };
  check('footer', layout.footer);
  layout.blocks.forEach((b, i) => {
    const at = `blocks[${i}]`;
    if (b.type === 'heading' || b.type === 'text') check(`${at}.text`, b.text);
    if (b.type === 'fields')
      b.rows.forEach((r, j) => {
        check(`${at}.rows[${j}].label`, r.label);
        check(`${at}.rows[${j}].value`, r.value);
      });
    if ((b.type === 'answers' || b.type === 'signature') && kind !== 'form')
      out[`${at}.type`] = `${b.type} blocks belong to form templates (kind form)`;
    if (b.type === 'items') {
      if (kind === 'form') out[`${at}.type`] = 'items blocks belong to appointment documents (not kind form)';
      const keys = b.columns.map((c) => c.key);
      if (new Set(keys).size !== keys.length) out[`${at}.columns`] = 'each column key may appear once';
    }
  });
  return out;
}

/** The item keys a layout's items blocks read (what an appointment document's items may carry). */
export function itemKeysOf(layout: Layout): Set<string> {
  const keys = new Set<string>();
  for (const b of layout.blocks) if (b.type === 'items') for (const c of b.columns) keys.add(c.key);
  return keys;
}

/** The values a document fills in: placeholder path -> text, plus the tables. */
export interface DocumentData {
  values: Record<string, string>;
  lang: string;
  author: string;
  answers: { label: string; value: string }[];
  items: Record<string, string>[];
  signature: { label: string; value: string }[];
  letterhead: { name: string; address: string[]; registration: string[]; logo: string | null } | null;
}

/** A resolved block as program.typ reads it: only plain strings, split into paragraphs and lines. */
type Resolved =
  | { type: 'heading'; text: string; level: number }
  | { type: 'text'; paragraphs: string[][]; size: string; bold: boolean; align: string }
  | { type: 'fields'; rows: { label: string; value: string[] }[] }
  | { type: 'table'; labels: string[]; rows: string[][][]; widths: number[] }
  | { type: 'signature'; rows: { label: string; value: string; wide: boolean }[] }
  | { type: 'page_break' | 'divider' }
  | { type: 'spacer'; size: string };

export interface ResolvedDocument {
  title: string;
  author: string;
  keywords: string[];
  lang: string;
  page: { paper: string; landscape: boolean };
  footer: string;
  letterhead: DocumentData['letterhead'];
  blocks: Resolved[];
}

// Characters a PDF cannot show or that would upset the layout: other controls than tab and newline, and
// the bidirectional overrides (a name must not reorder the text around it).
// biome-ignore lint/suspicious/noControlCharactersInRegex: these are what is removed.
const UNPRINTABLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
const clean = (s: string) => s.replace(/\r\n?/g, '\n').replace(UNPRINTABLE, '').replace(/\t/g, '    ');
// A word longer than a column (a URL, a code) would run past the margin: it gets a line-break opportunity
// (a zero-width space) every 20 characters.
const breakable = (s: string) => s.replace(/\S{41,}/gu, (w) => (w.match(/.{1,20}/gsu) ?? [w]).join('\u200b'));
const linesOf = (s: string) => breakable(clean(s)).split('\n');
const paragraphsOf = (s: string) =>
  breakable(clean(s))
    .split(/\n[ \t]*\n/)
    .map((p) => p.split('\n'));

/** Placeholders replaced by their values (plain text: nothing in a value is ever read as a placeholder). */
export function fill(text: string, values: Record<string, string>): string {
  return text.replace(PLACEHOLDER, (_m, path: string) => values[path] ?? '');
}

/** The template applied to a document's data: what the engine lays out. */
export function resolve(layout: Layout, title: string, data: DocumentData): ResolvedDocument {
  const f = (s: string) => fill(s, data.values);
  const blocks: Resolved[] = [];
  for (const b of layout.blocks) {
    switch (b.type) {
      case 'heading':
        blocks.push({ type: 'heading', text: clean(f(b.text)).replace(/\n/g, ' '), level: b.level ?? 1 });
        break;
      case 'text':
        blocks.push({
          type: 'text',
          paragraphs: paragraphsOf(f(b.text)),
          size: b.size ?? 'normal',
          bold: b.bold ?? false,
          align: b.align ?? 'left',
        });
        break;
      case 'fields':
        blocks.push({ type: 'fields', rows: b.rows.map((r) => ({ label: clean(f(r.label)), value: linesOf(f(r.value)) })) });
        break;
      case 'answers':
        blocks.push({
          type: 'table',
          labels: [b.question_label ?? 'Question', b.answer_label ?? 'Answer'].map(clean),
          rows: data.answers.map((a) => [linesOf(a.label), linesOf(a.value)]),
          widths: [2, 3],
        });
        break;
      case 'items':
        if (data.items.length)
          blocks.push({
            type: 'table',
            labels: b.columns.map((c) => clean(c.label)),
            rows: data.items.map((it) => b.columns.map((c) => linesOf(it[c.key] ?? ''))),
            widths: b.columns.map((c) => c.width ?? 1),
          });
        break;
      case 'signature':
        blocks.push({
          type: 'signature',
          rows: data.signature.map((r) => ({ label: clean(r.label), value: clean(r.value), wide: /\S{33,}/.test(r.value) })),
        });
        break;
      case 'spacer':
        blocks.push({ type: 'spacer', size: b.size ?? 'medium' });
        break;
      default:
        blocks.push({ type: b.type });
    }
  }
  return {
    title: clean(title),
    author: clean(data.author),
    keywords: [],
    lang: /^[a-z]{2,3}$/.test(data.lang) ? data.lang : 'en',
    page: { paper: layout.page.size === 'Letter' ? 'us-letter' : 'a4', landscape: layout.page.orientation === 'landscape' },
    footer: clean(f(layout.footer)).replace(/\n/g, ' '),
    letterhead: layout.letterhead ? data.letterhead : null,
    blocks,
  };
}
