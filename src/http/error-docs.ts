/**
 * `GET /docs/errors`: docs/errors.md as an HTML page, so that the `type` of every problem document
 * (`/docs/errors#<code>`, a reference relative to the server that answered) resolves on that server. The page
 * is rendered once from the file; its `<a id="code">` anchors are the targets.
 */
import { readFileSync } from 'node:fs';
import type { RoutePlugin } from '../plugin.ts';

const SOURCE = new URL('../../docs/errors.md', import.meta.url);

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Inline Markdown of this file: `code`, **bold**, [text](url) and the `<a id="…"></a>` anchors it writes. */
function inline(text: string): string {
  const anchors: string[] = [];
  const kept = text.replace(/<a id="([a-z0-9_]+)"><\/a>/gi, (_m, id: string) => {
    anchors.push(`<a id="${id}" href="#${id}"></a>`);
    return `\u0000${anchors.length - 1}\u0000`;
  });
  return escapeHtml(kept)
    .replace(/`([^`]+)`/g, '<code>$1</code>')
    .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
    .replace(/\[([^\]]+)\]\((https?:[^)\s]+|[#/][^)\s]*)\)/g, '<a href="$2">$1</a>')
    .replace(/\u0000(\d+)\u0000/g, (_m, i: string) => anchors[Number(i)]!);
}

/** The subset of Markdown docs/errors.md uses: headings, paragraphs, lists, fenced code and tables. */
export function renderErrorsPage(markdown: string): string {
  const out: string[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith('```')) {
      const code: string[] = [];
      for (i++; i < lines.length && !lines[i]!.startsWith('```'); i++) code.push(lines[i]!);
      out.push(`<pre><code>${escapeHtml(code.join('\n'))}</code></pre>`);
    } else if (/^#{1,6} /.test(line)) {
      const level = line.indexOf(' ');
      out.push(`<h${level}>${inline(line.slice(level + 1))}</h${level}>`);
    } else if (line.startsWith('|')) {
      const rows: string[][] = [];
      for (; i < lines.length && lines[i]!.startsWith('|'); i++) {
        const cells = lines[i]!.split('|').slice(1, -1);
        if (!cells.every((c) => /^\s*:?-+:?\s*$/.test(c))) rows.push(cells.map((c) => c.trim()));
      }
      i--;
      const [head, ...body] = rows;
      out.push(
        `<table><thead><tr>${(head ?? []).map((c) => `<th>${inline(c)}</th>`).join('')}</tr></thead><tbody>${body
          .map((r) => `<tr>${r.map((c) => `<td>${inline(c)}</td>`).join('')}</tr>`)
          .join('')}</tbody></table>`,
      );
    } else if (/^- /.test(line)) {
      const items: string[] = [];
      for (; i < lines.length && /^(- | {2}\S)/.test(lines[i]!); i++) {
        if (lines[i]!.startsWith('- ')) items.push(lines[i]!.slice(2));
        else items[items.length - 1] += ` ${lines[i]!.trim()}`;
      }
      i--;
      out.push(`<ul>${items.map((t) => `<li>${inline(t)}</li>`).join('')}</ul>`);
    } else if (line.trim() !== '') {
      const para: string[] = [];
      for (; i < lines.length && lines[i]!.trim() !== '' && !/^(#|\||```|- )/.test(lines[i]!); i++)
        para.push(lines[i]!);
      i--;
      out.push(`<p>${inline(para.join(' '))}</p>`);
    }
  }
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Agentyard errors</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3rem .5rem;vertical-align:top;text-align:left}pre{background:#f4f4f4;padding:.8rem;overflow:auto}:target{background:#ffa}</style>
</head><body>
${out.join('\n')}
</body></html>
`;
}

export const errorDocsPlugin: RoutePlugin = {
  name: 'error-docs',
  async root(app) {
    let page: string | undefined;
    app.get('/docs/errors', { schema: { hide: true } }, async (_request, reply) => {
      page ??= renderErrorsPage(readFileSync(SOURCE, 'utf8'));
      return reply.type('text/html; charset=utf-8').header('cache-control', 'public, max-age=3600').send(page);
    });
  },
};
