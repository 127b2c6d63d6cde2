import type { Factory, Run } from '../api-types.ts';
import { badge, factoryState, runState, shortRevision, timeAgo } from '../format.ts';
import { html } from '../html.ts';
import type { SafeHtml } from '../html.ts';
import { csrfField, errorBox, page } from '../layout.ts';
import type { Viewer } from '../layout.ts';

export interface RunCounts {
  /** Runs per active state, counted (`GET /run-counts`). */
  byState: { state: string; count: number }[];
  /** The newest active runs. */
  active: Run[];
}

export interface OverviewData {
  factories: Factory[];
  moreFactories: boolean;
  runs: RunCounts;
  /** Runs waiting for someone's answer (BLOCKED), with their question as the status message. */
  blocked: Run[];
  deliveriesLastHour: number | undefined;
  error?: string;
}

export const ACTIVE_RUN_STATES = ['QUEUED', 'PENDING', 'CLAIMED', 'INPROGRESS', 'BLOCKED'] as const;

/** The live part of the overview: runs by state, the active runs, deliveries; console.js refreshes it. */
export function overviewLive(data: Pick<OverviewData, 'runs' | 'deliveriesLastHour'>): SafeHtml {
  const total = data.runs.byState.reduce((n, s) => n + s.count, 0);
  return html`<div class="tiles">
      ${data.runs.byState.map(
        (s) =>
          html`<p class="tile"><a class="big" href="/console/runs?state=${s.state}">${s.count.toLocaleString('en')}</a> ${s.state.toLowerCase()}</p>`,
      )}
      <p class="tile"><span class="big">${data.deliveriesLastHour ?? '—'}</span> webhook deliveries in the last hour</p>
    </div>
    <h2>Active runs</h2>
    ${
      data.runs.active.length === 0
        ? html`<p class="muted">None.</p>`
        : html`<ul class="plain">${data.runs.active.map(
            (r) =>
              html`<li><a href="/console/runs/${r.run_id}">${r.title}</a> ${runState(r.state)} · ${r.started_at ? html`started ${timeAgo(r.started_at)}` : html`created ${timeAgo(r.created_at)}`}</li>`,
          )}</ul>${total > data.runs.active.length ? html`<p><a href="/console/runs">All runs</a></p>` : ''}`
    }`;
}

function registerForm(viewer: Viewer) {
  if (viewer.role !== 'admin') return html``;
  return html`<details class="card"><summary>Register a factory</summary>
    <form method="post" action="/console/factories" class="stack narrow">
      ${csrfField(viewer)}
      <label for="rf-name">Name</label><input id="rf-name" name="name" required maxlength="64">
      <label for="rf-url">Git URL <span class="muted">(leave empty for a managed factory)</span></label><input id="rf-url" name="url" placeholder="https://github.com/acme/factory.git">
      <label for="rf-branch">Production branch</label><input id="rf-branch" name="branch" value="main">
      <label for="rf-path">Sub-path <span class="muted">(optional)</span></label><input id="rf-path" name="path">
      <button type="submit">Register</button>
    </form></details>`;
}

export function overviewPage(viewer: Viewer, data: OverviewData): string {
  const rows = data.factories.map((f) => {
    const state = factoryState(f.status);
    return html`<tr>
      <th scope="row"><a href="/console/factories/${f.id}">${f.name}</a></th>
      <td>${badge(state.label, state.tone)}</td>
      <td><code>${shortRevision(f.status.applied_revision)}</code></td>
      <td><code>${shortRevision(f.status.attempted_revision)}</code></td>
      <td>${timeAgo(f.status.applied_at)}</td>
      <td class="num">${f.counts?.webhooks ?? '—'}</td>
      <td class="num">${f.counts?.automations ?? '—'}</td>
      <td class="num">${f.counts?.schedules ?? '—'}</td>
    </tr>`;
  });
  const body = html`<h1>Factories</h1>
    ${data.error ? errorBox(data.error) : ''}
    <div id="overview-live" data-live-html="/console/overview.html" aria-live="off">${overviewLive(data)}</div>
    ${
      data.factories.length === 0
        ? html`<p>No factories yet. Register one with <code>POST /api/v1/factories</code> (see the README's tour).</p>`
        : html`<div class="scroll"><table>
      <caption class="sr-only">Factories and their sync state</caption>
      <thead><tr><th scope="col">Factory</th><th scope="col">State</th><th scope="col">Applied</th><th scope="col">Attempted</th><th scope="col">Last apply</th><th scope="col" class="num">Webhooks</th><th scope="col" class="num">Automations</th><th scope="col" class="num">Schedules</th></tr></thead>
      <tbody>${rows}</tbody>
    </table></div>`
    }
    ${registerForm(viewer)}
    ${data.moreFactories ? html`<p class="muted">Showing the first ${data.factories.length} factories.</p>` : ''}
    <h2>Waiting for an answer</h2>
    ${
      data.blocked.length === 0
        ? html`<p class="muted">No run is waiting.</p>`
        : html`<ul class="plain" id="blocked-runs">${data.blocked.map(
            (r) =>
              html`<li><a href="/console/runs/${r.run_id}">${r.title}</a> · asks: <q>${r.status_message?.message ?? ''}</q> · ${timeAgo(r.updated_at)}</li>`,
          )}</ul>`
    }`;
  return page({ title: 'Factories', viewer, section: 'overview', body });
}
