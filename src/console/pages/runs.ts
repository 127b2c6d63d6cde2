import type { Factory, PageInfo, Run } from '../api-types.ts';
import { runState, timeAgo } from '../format.ts';
import { concurrencyNote } from './run.ts';
import { html } from '../html.ts';
import type { SafeHtml } from '../html.ts';
import { errorBox, page } from '../layout.ts';
import type { Viewer } from '../layout.ts';

export const RUN_FILTERS = ['state', 'source', 'factory_id', 'automation_id', 'name', 'creator', 'q'] as const;
export type RunFilters = Partial<Record<(typeof RUN_FILTERS)[number], string>>;

/** The columns the list sorts by, with the API's `sort_by` each stands for. */
export const RUN_SORTS = { title: 'Run', created_at: 'Created', updated_at: 'Updated' } as const;
export type RunSort = { by: keyof typeof RUN_SORTS; order: 'asc' | 'desc' };

export interface RunsPageData {
  runs: Run[];
  pageInfo: PageInfo;
  filters: RunFilters;
  sort: RunSort;
  /** Runs per page (25 unless the address says otherwise). */
  limit: number;
  /** The cursors of the pages before this one, oldest first (the first page has none). */
  back: string[];
  /** This page's cursor (absent on the first page). */
  cursor?: string;
  factories: Factory[];
  error?: string;
}

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

function listUrl(data: RunsPageData, over: { sort?: RunSort; cursor?: string; back?: string[] }): string {
  const q = new URLSearchParams(Object.entries(data.filters).filter((e): e is [string, string] => !!e[1]));
  const sort = over.sort ?? data.sort;
  if (sort.by !== 'created_at' || sort.order !== 'desc') {
    q.set('sort_by', sort.by);
    q.set('sort_order', sort.order);
  }
  if (data.limit !== 25) q.set('limit', String(data.limit));
  if (over.cursor) q.set('cursor', over.cursor);
  for (const b of over.back ?? []) q.append('back', b);
  const text = q.toString();
  return `/console/runs${text ? `?${text}` : ''}`;
}

function sortHeader(data: RunsPageData, by: keyof typeof RUN_SORTS): SafeHtml {
  const current = data.sort.by === by;
  const next: RunSort = { by, order: current && data.sort.order === 'desc' ? 'asc' : 'desc' };
  const aria = current ? (data.sort.order === 'asc' ? 'ascending' : 'descending') : undefined;
  return html`<th scope="col"${aria ? html` aria-sort="${aria}"` : ''}><a href="${listUrl(data, { sort: next })}">${RUN_SORTS[by]}${current ? (data.sort.order === 'asc' ? ' ▲' : ' ▼') : ''}</a></th>`;
}

function agentOf(r: Run): string {
  const config = r.agent_config && typeof r.agent_config === 'object' ? (r.agent_config as { name?: unknown }) : {};
  return r.agent_skill?.name ?? (typeof config.name === 'string' ? config.name : '—');
}

export function runsPage(viewer: Viewer, data: RunsPageData): string {
  const f = data.filters;
  const previous = data.cursor
    ? listUrl(data, { ...(data.back.length ? { cursor: data.back.at(-1)! } : {}), back: data.back.slice(0, -1) })
    : undefined;
  const next =
    data.pageInfo.has_next_page && data.pageInfo.next_cursor
      ? listUrl(data, {
          cursor: data.pageInfo.next_cursor,
          back: [...data.back, ...(data.cursor ? [data.cursor] : [])].slice(-20),
        })
      : undefined;
  const body = html`<h1>Runs</h1>
  <form method="get" action="/console/runs" class="filters" aria-label="Filter runs">
    <div><label for="f-q">Search title and prompt</label><input id="f-q" name="q" type="search" value="${f.q ?? ''}"></div>
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
    <div><label for="f-name">Agent</label><input id="f-name" name="name" value="${f.name ?? ''}"></div>
    <div><label for="f-creator">Creator ID</label><input id="f-creator" name="creator" value="${f.creator ?? ''}" placeholder="usr_… or sa_…"></div>
    <div><label for="f-automation">Automation ID</label><input id="f-automation" name="automation_id" value="${f.automation_id ?? ''}"></div>
    ${data.sort.by !== 'created_at' || data.sort.order !== 'desc' ? html`<input type="hidden" name="sort_by" value="${data.sort.by}"><input type="hidden" name="sort_order" value="${data.sort.order}">` : ''}
    ${data.limit !== 25 ? html`<input type="hidden" name="limit" value="${data.limit}">` : ''}
    <div><button type="submit">Filter</button></div>
  </form>
  ${data.error ? errorBox(data.error) : ''}
  ${
    data.runs.length === 0
      ? html`<p class="muted">No runs match.</p>`
      : html`<div class="scroll"><table id="run-list">
    <caption class="sr-only">Runs, sorted by ${RUN_SORTS[data.sort.by]} ${data.sort.order === 'asc' ? 'ascending' : 'descending'}</caption>
    <thead><tr>${sortHeader(data, 'title')}<th scope="col">State</th><th scope="col">Source</th><th scope="col">Agent</th><th scope="col">Creator</th>${sortHeader(data, 'created_at')}${sortHeader(data, 'updated_at')}</tr></thead>
    <tbody>${data.runs.map(
      (r) =>
        html`<tr><th scope="row"><a href="/console/runs/${r.run_id}">${r.title}</a></th><td>${runState(r.state)}${r.concurrency && concurrencyNote(r).toString() ? html`<br><small class="muted">${concurrencyNote(r)}</small>` : ''}</td><td>${r.source_detail ?? r.source}</td><td>${agentOf(r)}</td><td>${r.creator?.display_name ?? '—'}</td><td>${timeAgo(r.created_at)}</td><td>${timeAgo(r.updated_at)}</td></tr>`,
    )}</tbody></table></div>`
  }
  ${previous || next ? html`<nav class="pager" aria-label="Pages of runs">${previous ? html`<a href="${previous}" rel="prev">Previous page</a>` : ''}${next ? html`<a href="${next}" rel="next">Next page</a>` : ''}</nav>` : ''}`;
  return page({ title: 'Runs', viewer, section: 'runs', body });
}
