import type { Factory, PageInfo, Run } from '../api-types.ts';
import { runState, timeAgo } from '../format.ts';
import { html } from '../html.ts';
import type { SafeHtml } from '../html.ts';
import { errorBox, page } from '../layout.ts';
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
        html`<tr><th scope="row"><a href="/console/runs/${r.run_id}">${r.title}</a></th><td>${runState(r.state)}</td><td>${r.source_detail ?? r.source}</td><td>${r.creator?.display_name ?? '—'}</td><td>${timeAgo(r.created_at)}</td></tr>`,
    )}</tbody></table></div>`
  }
  ${data.pageInfo.has_next_page ? html`<p><a href="/console/runs?${next.toString()}">Next page</a></p>` : ''}`;
  return page({ title: 'Runs', viewer, section: 'runs', body });
}
