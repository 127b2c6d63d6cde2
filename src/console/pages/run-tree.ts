/**
 * The run page's tree (docs/orchestration.md): the run's root and every run below it, each with its agent, state
 * and status (a BLOCKED run's question, a finished run's answer). Reports, questions and replies are events of
 * the runs, in order in each run's event list.
 */
import type { Run } from '../api-types.ts';
import type { ConsoleApi } from '../api.ts';
import { enc } from '../api.ts';
import { runState } from '../format.ts';
import { html } from '../html.ts';
import type { SafeHtml } from '../html.ts';

/** Ancestors looked up at most (the tree depth limit is 4 by default). */
const MAX_UP = 8;

export interface RunTree {
  root: Run;
  /** Every run below the root, in creation order. */
  below: Run[];
}

/** The tree of `run` through the API; undefined for a run that has no parent and no children. */
export async function loadRunTree(api: ConsoleApi, run: Run): Promise<RunTree | undefined> {
  let root = run;
  for (let i = 0; i < MAX_UP && root.parent_run_id; i++)
    root = await api.get<Run>(`/agent/runs/${enc(root.parent_run_id)}`);
  const below = await api.get<{ runs: Run[] }>('/agent/runs', {
    ancestor_run_id: root.run_id,
    limit: '100',
    sort_by: 'created_at',
    sort_order: 'asc',
  });
  if (root === run && below.runs.length === 0) return undefined;
  return { root, below: below.runs };
}

function agentOf(run: Run): string {
  const name = (run.agent_config as { name?: unknown } | undefined)?.name;
  return typeof name === 'string' ? name : '—';
}

export function runTreeSection(tree: RunTree | undefined, current: string): SafeHtml | string {
  if (!tree) return '';
  const children = new Map<string, Run[]>();
  for (const r of tree.below) {
    const list = children.get(r.parent_run_id ?? '') ?? [];
    list.push(r);
    children.set(r.parent_run_id ?? '', list);
  }
  const item = (r: Run): SafeHtml => {
    const kids = children.get(r.run_id) ?? [];
    const label =
      r.run_id === current
        ? html`<strong>${r.title}</strong>`
        : html`<a href="/console/runs/${r.run_id}">${r.title}</a>`;
    const status = r.status_message?.message;
    return html`<li data-run="${r.run_id}">${label} · <span class="muted">${agentOf(r)}</span> ${runState(r.state)}${
      status
        ? html`<br><span class="${r.state === 'BLOCKED' ? 'question' : 'muted'}">${r.state === 'BLOCKED' ? 'Asks: ' : ''}${status}</span>`
        : ''
    }${kids.length ? html`<ul>${kids.map(item)}</ul>` : ''}</li>`;
  };
  return html`<section aria-labelledby="tree"><h2 id="tree">Run tree</h2>
  <ul class="tree">${item(tree.root)}</ul></section>`;
}
