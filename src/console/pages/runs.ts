import type { Factory, PageInfo, Run } from '../api-types.ts';
import { runTreeSection } from './run-tree.ts';
import type { RunTree } from './run-tree.ts';
import { runState, timeAgo } from '../format.ts';
import { html } from '../html.ts';
import type { SafeHtml } from '../html.ts';
import { csrfField, errorBox, page } from '../layout.ts';
import type { Viewer } from '../layout.ts';

export const RUN_FILTERS = ['state', 'source', 'factory_id', 'automation_id', 'name', 'creator'] as const;
export type RunFilters = Partial<Record<(typeof RUN_FILTERS)[number], string>>;

const STATES = ['QUEUED', 'PENDING', 'CLAIMED', 'INPROGRESS', 'SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED', 'BLOCKED'];
const SOURCES = [
  'API',
  'WEBHOOK',
  'FACTORY',
  'SCHEDULED_AGENT',
  'CLI',
  'LINEAR',
  'SLACK',
  'GITHUB_ACTION',
  'CLOUD_MODE',
];

function select(
  id: string,
  label: string,
  name: string,
  options: [string, string][],
  value: string | undefined,
): SafeHtml {
  return html`<div><label for="${id}">${label}</label><select id="${id}" name="${name}"><option value="">any</option>${options.map(
    ([v, text]) => html`<option value="${v}" ${v === value ? html`selected` : ''}>${text}</option>`,
  )}</select></div>`;
}

export function runsPage(
  viewer: Viewer,
  data: { runs: Run[]; pageInfo: PageInfo; filters: RunFilters; factories: Factory[]; error?: string },
): string {
  const f = data.filters;
  const next = new URLSearchParams(Object.entries(f).filter((e): e is [string, string] => !!e[1]));
  if (data.pageInfo.next_cursor) next.set('cursor', data.pageInfo.next_cursor);
  const body = html`<h1>Runs</h1>
  <form method="get" action="/console/runs" class="filters" aria-label="Filter runs">
    ${select(
      'f-state',
      'State',
      'state',
      STATES.map((s) => [s, s]),
      f.state,
    )}
    ${select(
      'f-source',
      'Source',
      'source',
      SOURCES.map((s) => [s, s]),
      f.source,
    )}
    ${select(
      'f-factory',
      'Factory',
      'factory_id',
      data.factories.map((x) => [x.id, x.name]),
      f.factory_id,
    )}
    <div><label for="f-automation">Automation ID</label><input id="f-automation" name="automation_id" value="${f.automation_id ?? ''}"></div>
    <div><label for="f-name">Name</label><input id="f-name" name="name" value="${f.name ?? ''}"></div>
    <div><label for="f-creator">Creator</label><input id="f-creator" name="creator" value="${f.creator ?? ''}"></div>
    <div><button type="submit">Filter</button></div>
  </form>
  ${data.error ? errorBox(data.error) : ''}
  ${
    data.runs.length === 0
      ? html`<p class="muted">No runs match.</p>`
      : html`<div class="scroll"><table>
    <thead><tr><th scope="col">Run</th><th scope="col">State</th><th scope="col">Source</th><th scope="col">Creator</th><th scope="col">Created</th></tr></thead>
    <tbody>${data.runs.map(
      (r) =>
        html`<tr><th scope="row"><a href="/console/runs/${r.run_id}">${r.title}</a></th><td>${runState(r.state)}</td><td>${r.source}</td><td>${r.creator?.display_name ?? '—'}</td><td>${timeAgo(r.created_at)}</td></tr>`,
    )}</tbody></table></div>`
  }
  ${data.pageInfo.has_next_page ? html`<p><a href="/console/runs?${next.toString()}">Next page</a></p>` : ''}`;
  return page({ title: 'Runs', viewer, section: 'runs', body });
}

const ACTIVE = new Set(['QUEUED', 'PENDING', 'CLAIMED', 'INPROGRESS', 'BLOCKED']);

export function runPage(viewer: Viewer, run: Run, notice?: string, error?: string, tree?: RunTree | undefined): string {
  const active = ACTIVE.has(run.state);
  const artifacts = run.artifacts ?? [];
  const body = html`<p class="crumbs"><a href="/console/runs">Runs</a> /</p>
  <h1>${run.title} <span id="run-state">${runState(run.state)}</span></h1>
  ${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}
  ${error ? errorBox(error) : ''}
  <dl class="facts">
    <dt>Run</dt><dd><code>${run.run_id}</code></dd>
    <dt>Source</dt><dd>${run.source}</dd>
    <dt>Creator</dt><dd>${run.creator?.display_name ?? '—'}</dd>
    <dt>Created</dt><dd>${timeAgo(run.created_at)}</dd>
    <dt>Status</dt><dd id="run-status">${run.status_message?.message ?? '—'}</dd>
  </dl>
  ${
    active
      ? html`<div class="actions">
    <form method="post" action="/console/runs/${run.run_id}/cancel" class="inline" data-while-active>${csrfField(viewer)}<button type="submit" class="danger">Cancel run</button></form>
  </div>`
      : ''
  }
  ${runTreeSection(tree, run.run_id)}
  <section aria-labelledby="events"><h2 id="events">Events</h2>
  <ol id="run-events" class="events" data-live-events="/console/runs/${run.run_id}/events" aria-live="polite"></ol>
  <noscript><p>Live events need JavaScript; the API serves them at <code>/api/v1/agent/runs/${run.run_id}/events</code>.</p></noscript>
  </section>
  <section aria-labelledby="followup"><h2 id="followup">Follow-up</h2>
  <form method="post" action="/console/runs/${run.run_id}/followups" class="stack narrow">${csrfField(viewer)}
    <label for="fu-message">Message</label><textarea id="fu-message" name="message" rows="3" required></textarea>
    <button type="submit">Send follow-up</button>
  </form></section>
  <section aria-labelledby="artifacts"><h2 id="artifacts">Artifacts</h2>
  ${artifacts.length ? html`<ul class="plain">${artifacts.map((a) => html`<li>${a.artifact_type} <code>${JSON.stringify(a.data ?? {})}</code></li>`)}</ul>` : html`<p class="muted">None.</p>`}
  </section>
  <section aria-labelledby="prompt"><h2 id="prompt">Prompt</h2><pre>${run.prompt}</pre></section>
  <section aria-labelledby="config"><h2 id="config">Configuration</h2><pre>${JSON.stringify(run.agent_config ?? {}, null, 2)}</pre></section>`;
  return page({ title: run.title, viewer, section: 'runs', body });
}
