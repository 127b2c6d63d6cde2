import { escapeHtml, SafeHtml } from './html.ts';

/**
 * A small Markdown renderer for what agents write (plans, answers): headings, paragraphs, lists, block quotes,
 * fenced code, rules, and inline code, bold, italics and links. Every piece of text is escaped; a link keeps
 * only an http(s) or mailto target, so no agent-written text can become markup or a script URL.
 */
export function markdown(source: string): SafeHtml {
  const lines = source.replace(/\r\n?/g, '\n').split('\n');
  const out: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    const fence = /^\s*(```|~~~)\s*([\w+-]*)/.exec(line);
    if (fence) {
      const body: string[] = [];
      i++;
      while (i < lines.length && !lines[i]!.trimStart().startsWith(fence[1]!)) body.push(lines[i++]!);
      i++;
      out.push(`<pre><code>${escapeHtml(body.join('\n'))}</code></pre>`);
      continue;
    }
    if (line.trim() === '') {
      i++;
      continue;
    }
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      // Headings inside a page start below the page's own h2 sections.
      const level = Math.min(6, heading[1]!.length + 2);
      out.push(`<h${level}>${inline(heading[2]!)}</h${level}>`);
      i++;
      continue;
    }
    if (/^\s*[-*_]/.test(line) && /^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      out.push('<hr>');
      i++;
      continue;
    }
    if (/^\s*>/.test(line)) {
      const quoted: string[] = [];
      while (i < lines.length && /^\s*>/.test(lines[i]!)) quoted.push(lines[i++]!.replace(/^\s*>\s?/, ''));
      out.push(`<blockquote>${markdown(quoted.join('\n')).text}</blockquote>`);
      continue;
    }
    const item = /^\s*([-*+]|\d{1,9}[.)])\s+/;
    if (item.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const items: string[] = [];
      while (i < lines.length && lines[i]!.trim() !== '') {
        const m = item.exec(lines[i]!);
        if (m) items.push(lines[i]!.slice(m[0].length));
        else if (items.length) items[items.length - 1] += ` ${lines[i]!.trim()}`;
        i++;
      }
      const tag = ordered ? 'ol' : 'ul';
      out.push(`<${tag}>${items.map((t) => `<li>${inline(t)}</li>`).join('')}</${tag}>`);
      continue;
    }
    const para: string[] = [];
    while (
      i < lines.length &&
      lines[i]!.trim() !== '' &&
      !/^(#{1,6}\s|\s*(```|~~~)|\s*>)/.test(lines[i]!) &&
      !(para.length && item.test(lines[i]!))
    )
      para.push(lines[i++]!.trim());
    out.push(`<p>${inline(para.join(' '))}</p>`);
  }
  return new SafeHtml(out.join('\n'));
}

const SAFE_URL = /^(https?:\/\/|mailto:)/i;

function inline(text: string): string {
  // Code spans first: their content is literal.
  const parts = text.split(/(`[^`]+`)/);
  return parts
    .map((part) => {
      if (part.length > 2 && part.startsWith('`') && part.endsWith('`'))
        return `<code>${escapeHtml(part.slice(1, -1))}</code>`;
      return emphasis(part);
    })
    .join('');
}

function emphasis(text: string): string {
  let s = escapeHtml(text);
  // Each rule only where its marker occurs: a long transcript has hundreds of plain lines.
  if (s.includes(']('))
    s = s.replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (whole, label: string, href: string) => {
      // `href` is already escaped; unescape only to test the scheme.
      const raw = href.replace(/&amp;/g, '&');
      return SAFE_URL.test(raw) ? `<a href="${href}" rel="noopener noreferrer">${label}</a>` : whole;
    });
  if (s.includes('**')) s = s.replace(/\*\*(?=\S)(.+?)\*\*/g, '<strong>$1</strong>');
  if (s.includes('__')) s = s.replace(/__(?=\S)(.+?)__/g, '<strong>$1</strong>');
  if (s.includes('*')) s = s.replace(/(^|[^*\w])\*(?=\S)([^*]+?)\*(?!\w)/g, '$1<em>$2</em>');
  return s;
}
