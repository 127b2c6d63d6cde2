import type { RunItem } from './model.ts';

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** A small read-only page where a person can follow a run; the session id in its URL is the capability. */
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
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;color:#222}
th{text-align:left;padding-right:1.5rem;color:#666;font-weight:500}pre{background:#f5f5f5;padding:1rem;white-space:pre-wrap}</style>
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
