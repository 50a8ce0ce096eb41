// Document rendering, each beside a floor measured in the same run:
//   1. A one-page visit summary (letterhead, four fields, three paragraphs): documents/s of
//      - the floor: the PDF engine alone (engine.renderRaw) on the very data the render core hands it, one after another;
//      - the render core: template resolution (placeholders, paragraphs) and the engine, as the API and the worker run it;
//      - the API: POST /v1/appointments/{id}/documents through app.inject (request pipeline, row-level security, the
//        document row, data model, the engine, the asset store, the ready row), one after another and 4 at a time.
//      Every render gets text of its own (Typst memoizes layouts: repeating an input would measure its cache).
//   2. A 20-page form of 400 answers: the engine alone and the render core (ms a document), and the worker's path
//      (renderQueued: data model read, render, store, ready) for a form of 200 long answers, the most a form
//      template holds (form templates take at most 200 fields).
// Run: npx tsx bench/documents.ts (embedded PGlite and memory; BENCH_MODE=services for PostgreSQL at
// TEST_DATABASE_URL and Redis at TEST_REDIS_URL). BENCH_DOCS sets the count of part 1 (200).
import { performance } from 'node:perf_hooks';
import { NO_RATE_LIMITS } from './support.ts';

if (process.env.BENCH_MODE === 'services') process.env.TEST_MODE = 'services';
const { startTestApp, dataOf } = await import('../apps/core-api/test/helpers.ts');
const { setUpClinic } = await import('../apps/core-api/test/support/appointment-clinic.ts');
const { createPdfEngine } = await import('../apps/core-api/src/modules/documents/render/engine.ts');
const { resolve } = await import('../apps/core-api/src/modules/documents/render/layout.ts');
const { renderQueued } = await import('../apps/core-api/src/modules/documents/jobs.ts');

const N = Number(process.env.BENCH_DOCS ?? 200);
const t = await startTestApp({ env: { LOG_LEVEL: 'warn', ...NO_RATE_LIMITS, DOCUMENT_INLINE_MAX_ROWS: '60' } });
const c = await setUpClinic(t, 'bench');
dataOf(
  await c.call('PUT', '/v1/document-letterhead', c.admin, {
    name: 'Clinica Sfânta Ană',
    address_lines: ['Strada Țăranului 12', '010101 București'],
    registration_numbers: ['CUI RO1234567', 'J40/123/2020'],
  }),
);
const summaryLayout = {
  footer: '{{organization.name}} · {{document.title}} · {{specialist.display_name}}',
  blocks: [
    { type: 'heading', text: 'Rezumatul vizitei' },
    {
      type: 'fields',
      rows: [
        { label: 'Pacient', value: '{{patient.full_name}}' },
        { label: 'Data nașterii', value: '{{patient.date_of_birth}}' },
        { label: 'Vizita', value: '{{appointment.date}} {{appointment.time}} ({{appointment.time_zone}})' },
        { label: 'Specialist', value: '{{specialist.display_name}}' },
      ],
    },
    { type: 'heading', level: 2, text: 'Constatări și recomandări' },
    { type: 'text', text: '{{document.body}}' },
  ],
};
const tpl = dataOf(
  await c.call('POST', '/v1/pdf-templates', c.admin, { name: 'Rezumat', kind: 'visit_summary', layout: summaryLayout }),
  201,
);
const appointment = await c.book();
const spec = c.specialists[0]!.token;
const body = (i: number) =>
  `Vizita ${i}: mobilitatea umărului drept s-a îmbunătățit; durerea 3/10.\n\nRecomandări: exerciții zilnice, gheață după efort (ș ț ă ł ź ß ř).\n\nControl peste două săptămâni.`;

// The data the render core builds for this visit, taken from one document made through the API.
const first = dataOf(
  await c.call('POST', `/v1/appointments/${appointment.id}/documents`, spec, { pdf_template_id: tpl.id, body: body(-1) }),
  201,
);
if (first.status !== 'ready') throw new Error(`the first document is ${first.status}`);
const values: Record<string, string> = {
  'organization.name': 'Clinica Sfânta Ană',
  'patient.full_name': 'Ștefan Țăranu',
  'patient.date_of_birth': '1980-03-04',
  'appointment.date': '2026-12-01',
  'appointment.time': '09:00-09:30',
  'appointment.time_zone': 'Europe/Bucharest',
  'specialist.display_name': 'Dr Spec 1',
  'document.title': 'Rezumat',
};
const summaryData = (i: number) => ({
  values: { ...values, 'document.body': body(i) },
  lang: 'ro',
  author: 'Clinica Sfânta Ană',
  answers: [],
  items: [],
  signature: [],
  letterhead: {
    name: 'Clinica Sfânta Ană',
    address: ['Strada Țăranului 12', '010101 București'],
    registration: ['CUI RO1234567', 'J40/123/2020'],
    logo: null,
  },
});
const fullLayout = { page: { size: 'A4' as const, orientation: 'portrait' as const }, letterhead: true, ...summaryLayout } as never;

const engine = createPdfEngine({ maxPages: 200, timeoutMs: 60_000 });
let seq = 0;
async function rate(label: string, n: number, concurrency: number, one: (i: number) => Promise<unknown>) {
  for (let i = 0; i < 5; i++) await one(++seq); // warm-up
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++;
        await one(++seq);
      }
    }),
  );
  const s = (performance.now() - started) / 1000;
  const perSecond = n / s;
  console.log(`${label.padEnd(58)} ${perSecond.toFixed(1).padStart(8)} documents/s  ${((s * 1000) / n).toFixed(2).padStart(7)} ms each`);
  return perSecond;
}

console.log(`\n1. One-page visit summary, ${N} documents each (${t.db.kind})`);
const floor = await rate('floor: the engine alone (renderRaw, same data)', N, 1, (i) =>
  engine.renderRaw(JSON.stringify({ ...resolve(fullLayout, 'Rezumat', summaryData(i)) })),
);
const core = await rate('render core: resolve + engine', N, 1, (i) => engine.render(resolve(fullLayout, 'Rezumat', summaryData(i))));
const api1 = await rate('API: POST /v1/appointments/{id}/documents, 1 at a time', N, 1, async (i) => {
  const res = await c.call('POST', `/v1/appointments/${appointment.id}/documents`, spec, { pdf_template_id: tpl.id, body: body(i) });
  if (res.statusCode !== 201 || res.json().data.status !== 'ready') throw new Error(res.body);
});
const api4 = await rate('API: the same, 4 at a time', N, 4, async (i) => {
  const res = await c.call('POST', `/v1/appointments/${appointment.id}/documents`, spec, { pdf_template_id: tpl.id, body: body(i) });
  if (res.statusCode !== 201 || res.json().data.status !== 'ready') throw new Error(res.body);
});
console.log(
  `ratios to the floor: render core ${(core / floor).toFixed(2)}, API 1 at a time ${(api1 / floor).toFixed(2)}, API 4 at a time ${(api4 / floor).toFixed(2)} (target >= 0.8)`,
);

console.log('\n2. Long forms');
const answers = (i: number) =>
  Array.from({ length: 400 }, (_, k) => ({
    label: `Întrebarea ${k + 1}: cum ați descrie durerea în ultima săptămână?`,
    value: `Răspunsul ${k + 1} (${i}): durere moderată, mai ales dimineața, după somn; se ameliorează cu mișcare ușoară și căldură locală, dar revine seara după efort.`,
  }));
const formLayout = {
  page: { size: 'A4' as const, orientation: 'portrait' as const },
  letterhead: true,
  footer: '{{organization.name}}',
  blocks: [{ type: 'heading', text: 'Chestionar' }, { type: 'answers' }, { type: 'signature' }],
} as never;
const formData = (i: number) => ({ ...summaryData(i), answers: answers(i), signature: [{ label: 'Status', value: 'Not signed' }] });
const timeOf = async (label: string, one: (i: number) => Promise<{ pages: number; engineMs?: number }>) => {
  await one(++seq);
  const ms: number[] = [];
  let pages = 0;
  for (let k = 0; k < 5; k++) {
    const started = performance.now();
    pages = (await one(++seq)).pages;
    ms.push(performance.now() - started);
  }
  ms.sort((a, b) => a - b);
  console.log(`${label.padEnd(58)} ${pages} pages, median ${ms[2]!.toFixed(0)} ms, max ${ms[4]!.toFixed(0)} ms`);
};
await timeOf('400 answers, floor: the engine alone', (i) =>
  engine.renderRaw(JSON.stringify(resolve(formLayout, 'Chestionar', formData(i)))),
);
await timeOf('400 answers, render core: resolve + engine', (i) => engine.render(resolve(formLayout, 'Chestionar', formData(i))));

// The worker's path for the longest form a template can make: 200 long-text fields.
const fields: string[] = [];
for (let k = 0; k < 200; k++) {
  fields.push(
    dataOf(
      await c.call('POST', '/v1/custom-fields', c.admin, {
        entity_type: 'form',
        key: `q${k}`,
        label: `Întrebarea ${k + 1}: cum ați descrie durerea?`,
        field_type: 'long_text',
      }),
      201,
    ).id,
  );
}
const ft = dataOf(
  await c.call('POST', '/v1/form-templates', c.admin, { name: 'Lung', fields: fields.map((id) => ({ custom_field_id: id })) }),
  201,
);
const pdfForm = dataOf(
  await c.call('POST', '/v1/pdf-templates', c.admin, {
    name: 'Chestionar',
    kind: 'form',
    layout: { blocks: [{ type: 'answers' }, { type: 'signature' }] },
  }),
  201,
);
await timeOf('200 long answers, the worker path (renderQueued)', async (i) => {
  const valuesOf = Object.fromEntries(
    fields.map((_, k) => [
      `q${k}`,
      `Răspunsul ${k + 1} (${i}): durere moderată dimineața, după somn; se ameliorează cu mișcare ușoară și căldură locală, revine seara.`,
    ]),
  );
  const form = dataOf(
    await c.call('POST', '/v1/forms', c.admin, { form_template_id: ft.id, patient_id: c.patient.id, values: valuesOf }),
    201,
  );
  const queued = dataOf(await c.call('POST', `/v1/forms/${form.id}/render`, c.admin, { pdf_template_id: pdfForm.id }), 201);
  if (queued.status !== 'queued') throw new Error(`expected a queued document, got ${queued.status}`);
  const d = await renderQueued({ db: t.db, assets: t.rt.assets, logger: t.rt.logger, engine }, c.org.id, queued.id);
  if (d.status !== 'ready') throw new Error(`render ${d.status}: ${d.error}`);
  return { pages: d.page_count ?? 0 };
});

await engine.close();
await t.close();
