import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as React from 'react';
import { renderToStaticMarkup } from 'react-dom/server';

/*
 * TrendChart (@clinic/ui) rendered to markup, no browser needed. It lives here because this folder is
 * type-checked with the UI's JSX settings (apps/web/ui/tsconfig.json); the test runner's transform of .tsx is
 * the classic one, which needs React in scope.
 */
(globalThis as { React?: unknown }).React = React;
const { TrendChart } = await import('../../../../packages/ui/src/chart.tsx');
const { I18nProvider } = await import('../../../../packages/ui/src/i18n/react.tsx');
const { createElement } = React;

const render = (lang: 'en' | 'ro', points: { label: string; value: number | null }[], max?: number) =>
  renderToStaticMarkup(
    createElement(I18nProvider, { lang, children: createElement(TrendChart, { title: 'Form score', points, ...(max ? { max } : {}) }) }),
  );

/** The chart's text alternative carries what the picture shows: a summary naming the image, every point in a table. */
describe('TrendChart', () => {
  it('names the image by a summary of the values and lists every point in its table', () => {
    const html = render('en', [
      { label: '1 Dec', value: 60 },
      { label: '2 Dec', value: null },
      { label: '3 Dec', value: 72.25 },
      { label: '4 Dec', value: 55 },
    ]);
    assert.match(html, /role="img" aria-labelledby="([^"]+)"/);
    const id = /aria-labelledby="([^"]+)"/.exec(html)![1]!;
    assert.match(html, new RegExp(`<title id="${id}">Form score: 3 values, from 60 to 55; lowest 55, highest 72.3.</title>`));
    const rows = [...html.matchAll(/<tr><th scope="row">([^<]+)<\/th><td>([^<]+)<\/td><\/tr>/g)].map((m) => [m[1], m[2]]);
    assert.deepEqual(rows, [
      ['1 Dec', '60'],
      ['2 Dec', '–'],
      ['3 Dec', '72.3'],
      ['4 Dec', '55'],
    ]);
  });

  it('breaks the line at a missing value and draws a dot per value only', () => {
    const html = render('en', [
      { label: 'a', value: 10 },
      { label: 'b', value: 20 },
      { label: 'c', value: null },
      { label: 'd', value: 30 },
      { label: 'e', value: 40 },
    ]);
    assert.equal([...html.matchAll(/class="trend-line"/g)].length, 2, 'two segments around the gap');
    assert.equal([...html.matchAll(/class="trend-dot"/g)].length, 4);
  });

  it('scales to the given maximum: a score of 100 reaches the top, 50 the middle', () => {
    const html = render(
      'en',
      [
        { label: 'x', value: 50 },
        { label: 'y', value: 100 },
      ],
      100,
    );
    const ys = [...html.matchAll(/<circle cx="[^"]+" cy="([^"]+)"/g)].map((m) => Number(m[1]));
    // The plot spans y 12 (top) to 132 (bottom) of a 160-high box.
    assert.deepEqual(ys, [72, 12]);
  });

  it('says so when there is nothing to draw, in the page language', () => {
    assert.match(render('ro', []), /<title id="[^"]+">Form score: încă nicio valoare.<\/title>/);
    assert.match(render('ro', []), /Arată datele/);
  });
});
