// The PDF engines compared for document rendering (docs/decisions.md, "Documents"): Typst (@myriaddreamin/typst-ts-node-compiler,
// the project's engine), pdfmake, pdfkit and @react-pdf/renderer, on the same two documents in Noto Sans: a one-page
// visit summary (letterhead, a table of 8 rows, paragraphs) and a form of 400 answers in a table whose header must
// repeat, with "n / N" page numbers. Each render gets text of its own (pdfmake changes what it is given; Typst
// memoizes layouts), after one warm-up; it prints ms a document, the size and the file (pages: pdfinfo).
// The other engines are not the project's dependencies: install them in a scratch folder first, e.g.
//   npm install --prefix /tmp/pdf-engines pdfmake@0.3.11 pdfkit@0.20.2 @react-pdf/renderer@4.9.0 react
//   PDF_ENGINES_DIR=/tmp/pdf-engines node bench/pdf-engines.mjs [engine]
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const here = createRequire(import.meta.url);
const scratch = process.env.PDF_ENGINES_DIR ? createRequire(join(process.env.PDF_ENGINES_DIR, 'package.json')) : here;
const load = async (name) => import(pathToFileURL(scratch.resolve(name)).href);
const { NodeCompiler } = here('@myriaddreamin/typst-ts-node-compiler');
const PDFDocument = (await load('pdfkit')).default;
const pdfmake = (await load('pdfmake')).default;
const React = (await load('react')).default;
const ReactPDF = await load('@react-pdf/renderer');
const fontDir = join(here.resolve('@expo-google-fonts/noto-sans/package.json'), '..');
const outDir = process.env.PDF_ENGINES_OUT ?? 'test-artifacts/pdf-engines';
mkdirSync(outDir, { recursive: true });
const F = (w) => readFileSync(join(fontDir, w, `NotoSans_${w}.ttf`));
const regular = F('400Regular'),
  bold = F('700Bold');
const name = 'Ștefan Łukasz Źdźbło-Weiß Řehoř';
const org = { name: 'Clinica Sfânta Ană', address: 'Strada Țăranului 12, București', reg: 'CUI RO1234567 · J40/123/2020' };
const meds = Array.from({ length: 8 }, (_, i) => [`Medicament ${i + 1} — ăîșț`, `${i + 1} × zilnic`, `${7 + i} zile`]);
const paras = [
  'Pacientul s-a prezentat pentru control. Mobilitatea umărului drept s-a îmbunătățit față de vizita anterioară; durerea este de 3/10.',
  'Recomandări: exerciții zilnice, gheață după efort, revenire peste două săptămâni. Żółć gęślą jaźń. Straße. Příliš žluťoučký kůň.',
  'Semnat electronic.',
];
const answers = Array.from({ length: 400 }, (_, i) => [
  `Întrebarea ${i + 1}: cum ați descrie durerea (ș ț ă ł ź ß ř)?`,
  `Răspunsul ${i + 1}: durere moderată, mai ales dimineața, după somn; se ameliorează cu mișcare ușoară și căldură locală.`,
]);

// ---- typst
const typstSrc = `#let d = json(bytes(sys.inputs.data))
#set document(title: d.title)
#set page(paper: "a4", margin: 2cm, footer: context align(right, text(8pt)[#counter(page).display("1 / 1", both: true)]))
#set text(font: "Noto Sans", size: 10pt, lang: "ro")
#text(14pt, weight: "bold", d.org.name) \\
#text(9pt, d.org.address) \\
#text(9pt, d.org.reg)
#line(length: 100%)
#text(16pt, weight: "bold", d.title)

Pacient: #text(weight: "bold", d.name)
#if d.meds.len() > 0 {
table(columns: (2fr, 1fr, 1fr), table.header(..("Medicament", "Doză", "Durată").map(h => text(weight: "bold", h))), ..d.meds.flatten().map(c => [#c]))
}
#for p in d.paras { par(p) }
#if d.answers.len() > 0 {
table(columns: (1fr, 1fr), table.header(text(weight: "bold", "Întrebare"), text(weight: "bold", "Răspuns")), ..d.answers.flatten().map(c => [#c]))
}`;
const typst = NodeCompiler.create({ workspace: outDir, fontArgs: [{ fontBlobs: [regular, bold] }] });
const typstRender = (doc, a) =>
  typst.pdf(
    { mainFileContent: typstSrc, inputs: { data: JSON.stringify(doc) } },
    a ? { pdfStandard: 'a-2b', creationTimestamp: 0 } : undefined,
  );

// ---- pdfmake
const fr = join(fontDir, '400Regular/NotoSans_400Regular.ttf'),
  fb = join(fontDir, '700Bold/NotoSans_700Bold.ttf');
pdfmake.setFonts({ Noto: { normal: fr, bold: fb, italics: fr, bolditalics: fb } });
pdfmake.setUrlAccessPolicy(() => false);
pdfmake.setLocalAccessPolicy((p) => p.includes('noto-sans'));
const pdfmakeRender = async (doc) => {
  const content = [
    { text: doc.org.name, fontSize: 14, bold: true },
    { text: doc.org.address, fontSize: 9 },
    { text: doc.org.reg, fontSize: 9 },
    { text: doc.title, fontSize: 16, bold: true, margin: [0, 8] },
    { text: ['Pacient: ', { text: doc.name, bold: true }] },
  ];
  if (doc.meds.length)
    content.push({
      table: {
        headerRows: 1,
        widths: ['*', 'auto', 'auto'],
        body: [['Medicament', 'Doză', 'Durată'].map((t) => ({ text: t, bold: true })), ...doc.meds],
      },
    });
  for (const p of doc.paras) content.push({ text: p, margin: [0, 4] });
  if (doc.answers.length)
    content.push({
      table: {
        headerRows: 1,
        widths: ['*', '*'],
        body: [
          [
            { text: 'Întrebare', bold: true },
            { text: 'Răspuns', bold: true },
          ],
          ...doc.answers,
        ],
      },
    });
  const pdf = pdfmake.createPdf({
    content,
    defaultStyle: { font: 'Noto', fontSize: 10 },
    pageSize: 'A4',
    pageMargins: 57,
    footer: (c, n) => ({ text: `${c} / ${n}`, alignment: 'right', fontSize: 8, margin: [0, 0, 57, 0] }),
  });
  return pdf.getBuffer();
};

// ---- pdfkit (hand layout; its table does not repeat a header)
const pdfkitRender = (doc) =>
  new Promise((resolve) => {
    const d = new PDFDocument({ size: 'A4', margin: 57, bufferPages: true });
    const chunks = [];
    d.on('data', (c) => chunks.push(c));
    d.on('end', () => resolve(Buffer.concat(chunks)));
    d.registerFont('R', regular);
    d.registerFont('B', bold);
    d.font('B').fontSize(14).text(doc.org.name);
    d.font('R').fontSize(9).text(doc.org.address).text(doc.org.reg);
    d.font('B').fontSize(16).text(doc.title);
    d.font('R').fontSize(10).text(`Pacient: ${doc.name}`);
    if (doc.meds.length) d.table({ data: [['Medicament', 'Doză', 'Durată'], ...doc.meds] });
    for (const p of doc.paras) d.text(p);
    if (doc.answers.length) d.table({ data: [['Întrebare', 'Răspuns'], ...doc.answers] });
    d.end();
  });

// ---- react-pdf
ReactPDF.Font.register({ family: 'Noto', fonts: [{ src: fr }, { src: fb, fontWeight: 700 }] });
const h = React.createElement;
const { Document, Page, Text, View } = ReactPDF;
const row = (cells, b, key) =>
  h(
    View,
    { style: { flexDirection: 'row', borderBottom: '1pt solid #000' }, wrap: false, key },
    cells.map((c, i) => h(Text, { key: i, style: { flex: 1, padding: 2, fontWeight: b ? 700 : 400 } }, c)),
  );
const reactRender = (doc) =>
  ReactPDF.renderToBuffer(
    h(
      Document,
      { title: doc.title },
      h(
        Page,
        { size: 'A4', style: { padding: 57, fontFamily: 'Noto', fontSize: 10 } },
        h(Text, { style: { fontSize: 14, fontWeight: 700 } }, doc.org.name),
        h(Text, { style: { fontSize: 9 } }, doc.org.address),
        h(Text, { style: { fontSize: 9 } }, doc.org.reg),
        h(Text, { style: { fontSize: 16, fontWeight: 700 } }, doc.title),
        h(Text, null, `Pacient: ${doc.name}`),
        doc.meds.length
          ? h(View, null, row(['Medicament', 'Doză', 'Durată'], true, 'h'), ...doc.meds.map((r, i) => row(r, false, i)))
          : null,
        ...doc.paras.map((p, i) => h(Text, { key: `p${i}` }, p)),
        doc.answers.length
          ? h(
              View,
              null,
              h(View, { fixed: true }, row(['Întrebare', 'Răspuns'], true, 'h')),
              ...doc.answers.map((r, i) => row(r, false, i)),
            )
          : null,
        h(Text, {
          fixed: true,
          style: { position: 'absolute', bottom: 20, right: 57, fontSize: 8 },
          render: ({ pageNumber, totalPages }) => `${pageNumber} / ${totalPages}`,
        }),
      ),
    ),
  );

// Fresh inputs for every render (pdfmake mutates what it is given; Typst memoizes what it saw before).
const summary = (i) => ({
  title: 'Rezumatul vizitei',
  name: `${name} ${i}`,
  org: { ...org },
  meds: meds.map(([a, b, c]) => [`${a} ${i}`, b, c]),
  paras: paras.map((p) => `${p} ${i}`),
  answers: [],
});
const form = (i) => ({
  title: 'Chestionar',
  name: `${name} ${i}`,
  org: { ...org },
  meds: [],
  paras: [],
  answers: answers.map(([q, a]) => [q, `${a} ${i}`]),
});
const engines = {
  typst: (d) => typstRender(d),
  'typst PDF/A-2b': (d) => typstRender(d, true),
  pdfmake: pdfmakeRender,
  pdfkit: pdfkitRender,
  'react-pdf': reactRender,
};
const only = process.argv[2];
let seq = 0;
for (const [eng, fn] of Object.entries(engines)) {
  if (only && eng !== only) continue;
  for (const [docName, doc, n] of [
    ['summary', summary, 30],
    ['form400', form, 5],
  ]) {
    let out = await fn(doc(`w${++seq}`)); // warm-up
    out = await fn(doc(`w${++seq}`));
    const t0 = performance.now();
    for (let i = 0; i < n; i++) out = await fn(doc(`${++seq}`));
    const ms = (performance.now() - t0) / n;
    const file = join(outDir, `${eng.replace(/\W+/g, '_')}-${docName}.pdf`);
    writeFileSync(file, out);
    console.log(`${eng}\t${docName}\t${ms.toFixed(1)} ms\t${(out.length / 1024).toFixed(0)} KiB\t${file}`);
  }
}
