import type { RunItem } from './model.ts';

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/**
 * A small read-only page where a person can follow a run; the session id in its URL is the capability. No inline
 * code or style: it is served under the console's Content-Security-Policy.
 */
export function renderSessionPage(run: RunItem): string {
  const rows: [string, string][] = [
    ['State', run.state],
    ['Run', run.run_id],
    ['Source', run.source_detail ?? run.source],
    ['Created', run.created_at],
    ['Updated', run.updated_at],
    ['Started', run.started_at ?? '—'],
    ['Creator', run.creator?.display_name ?? '—'],
    ['Status', run.status_message?.message ?? '—'],
  ];
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(run.title)} · Agentyard</title>
<link rel="stylesheet" href="/console/assets/console.css">
</head><body>
<main>
<h1>${escapeHtml(run.title)}</h1>
<p><a href="">Reload</a> to see the latest state.</p>
<table><caption>The run</caption>${rows.map(([k, v]) => `<tr><th scope="row">${k}</th><td>${escapeHtml(v)}</td></tr>`).join('')}</table>
<h2>Prompt</h2><pre>${escapeHtml(run.prompt)}</pre>
<h2>Configuration</h2><pre>${escapeHtml(JSON.stringify(run.agent_config, null, 2))}</pre>
</main>
</body></html>`;
}
