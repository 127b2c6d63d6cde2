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

/** A report, question or reply among the tree's runs, as `GET /agent/runs/{id}/tree` answers it. */
export interface TreeMessage {
  run_id: string;
  type: 'report' | 'question' | 'reply';
  text: string;
  to_run_id?: string;
  occurred_at: string;
}

export interface RunTree {
  root: Run;
  /** Every run below the root, in creation order. */
  below: Run[];
  /** The reports, questions and replies of every run of the tree, oldest first. */
  messages: TreeMessage[];
  /** The tree has more runs than the answer holds. */
  truncated: boolean;
}

/**
 * The tree of run `runId` through the API (one request: the server finds the root and the runs below it in one
 * statement); undefined for a run that has no parent and no children.
 */
export async function loadRunTree(api: ConsoleApi, runId: string): Promise<RunTree | undefined> {
  const doc = await api.get<{ root_run_id: string; runs: Run[]; truncated: boolean; messages: TreeMessage[] }>(
    `/agent/runs/${enc(runId)}/tree`,
  );
  const [root, ...below] = doc.runs;
  if (!root || below.length === 0) return undefined;
  return { root, below, messages: doc.messages, truncated: doc.truncated };
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
  const titles = new Map([tree.root, ...tree.below].map((r) => [r.run_id, r.title]));
  const who = (id: string): SafeHtml => html`<a href="/console/runs/${id}">${titles.get(id) ?? id}</a>`;
  const message = (m: TreeMessage): SafeHtml =>
    html`<li data-run="${m.run_id}" data-type="${m.type}"><span class="muted">${m.occurred_at.slice(0, 19).replace('T', ' ')}</span> ${who(m.run_id)} ${
      m.type === 'report'
        ? html`reported to ${m.to_run_id ? who(m.to_run_id) : 'its parent'}`
        : m.type === 'question'
          ? 'asked'
          : 'replied'
    }: <span class="${m.type === 'question' ? 'question' : ''}">${m.text}</span></li>`;
  return html`<section aria-labelledby="tree"><h2 id="tree">Run tree</h2>
  <ul class="tree">${item(tree.root)}</ul>${tree.truncated ? html`<p class="muted">The first ${tree.below.length + 1} runs of the tree.</p>` : ''}${
    tree.messages.length
      ? html`<h3 id="tree-messages">Reports, questions and replies</h3><ol class="plain tree-messages">${tree.messages.map(message)}</ol>`
      : ''
  }</section>`;
}
