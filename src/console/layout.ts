import { html } from './html.ts';
import type { SafeHtml } from './html.ts';

export interface Viewer {
  teamName: string;
  displayName: string;
  role: 'admin' | 'member';
  instanceAdmin: boolean;
  csrf: string;
}

export type Section = 'overview' | 'runs' | 'schedules' | 'integrations' | 'secrets' | 'api-keys' | 'none';

/** The sections, and whether only team admins see them (the API refuses members there anyway). */
const NAV: [Section, string, string, boolean][] = [
  ['overview', 'Factories', '/', false],
  ['runs', 'Runs', '/console/runs', false],
  ['schedules', 'Schedules', '/console/schedules', false],
  ['integrations', 'Integrations', '/console/integrations', false],
  ['secrets', 'Secrets', '/console/secrets', true],
  ['api-keys', 'API keys', '/console/api-keys', true],
];

/** The page shell: one stylesheet, one script, no inline code (the Content-Security-Policy forbids it). */
export function page(opts: { title: string; viewer?: Viewer; section?: Section; body: SafeHtml }): string {
  const { viewer } = opts;
  const nav = viewer
    ? html`<nav aria-label="Main">
        <ul>
          ${NAV.filter(([, , , admin]) => !admin || viewer.role === 'admin').map(([section, label, href]) => html`<li><a href="${href}" ${section === opts.section ? html`aria-current="page"` : ''}>${label}</a></li>`)}
        </ul>
        <div class="who">
          <span>${viewer.displayName} · ${viewer.teamName} · ${viewer.instanceAdmin ? 'instance admin' : viewer.role === 'admin' ? 'team admin' : 'member'}</span>
          <form method="post" action="/console/sign-out">
            <input type="hidden" name="csrf" value="${viewer.csrf}">
            <button type="submit" class="link">Sign out</button>
          </form>
        </div>
      </nav>`
    : '';
  return `<!doctype html>${html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${opts.title} · Agentyard</title>
<link rel="icon" href="/console/assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/console/assets/console.css">
<script src="/console/assets/console.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header><a class="brand" href="/">Agentyard</a>${nav}</header>
<main id="main">
${opts.body}
</main>
</body>
</html>`}`;
}

export function errorBox(message: string): SafeHtml {
  return html`<p class="error" role="alert">${message}</p>`;
}

export function csrfField(viewer: Viewer): SafeHtml {
  return html`<input type="hidden" name="csrf" value="${viewer.csrf}">`;
}

/** A question before a change that cannot be undone from here: the form posts only when confirmed. */
export function confirmPage(
  viewer: Viewer,
  opts: { title: string; explanation: string; action: string; button: string; back: string; backLabel: string },
): string {
  const body = html`<h1>${opts.title}</h1>
  <p>${opts.explanation}</p>
  <div class="actions"><form method="post" action="${opts.action}" class="inline">${csrfField(viewer)}<button type="submit" class="danger">${opts.button}</button></form>
  <a href="${opts.back}">${opts.backLabel}</a></div>`;
  return page({ title: opts.title, viewer, section: 'none', body });
}
