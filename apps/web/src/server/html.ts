/** Text for HTML: the five characters that can change markup. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * The service's own small pages (404, not built, errors, the platform landing): plain HTML, no script,
 * no inline style, so they pass the same strict CSP as the apps.
 */
export function page(title: string, bodyHtml: string, lang = 'en'): string {
  return `<!doctype html>
<html lang="${escapeHtml(lang)}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
</head>
<body>
<main>
${bodyHtml}
</main>
</body>
</html>
`;
}

export function errorPage(title: string, message: string, link?: { href: string; text: string }): string {
  return page(
    title,
    `<h1>${escapeHtml(title)}</h1>\n<p>${escapeHtml(message)}</p>${link ? `\n<p><a href="${escapeHtml(link.href)}">${escapeHtml(link.text)}</a></p>` : ''}`,
  );
}
