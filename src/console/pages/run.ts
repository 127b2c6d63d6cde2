/**
 * A run's page, built from small sections (`runSections`): each takes the page's data and answers its HTML,
 * so a new section is one more function in the list.
 */
import type { Run, RunEventDoc } from '../api-types.ts';
import { runState, timeAgo } from '../format.ts';
import { html, SafeHtml } from '../html.ts';
import { csrfField, errorBox, page } from '../layout.ts';
import type { Viewer } from '../layout.ts';
import { runTreeSection } from './run-tree.ts';
import type { RunTree } from './run-tree.ts';
import { runScoresSection } from './scores.ts';
import type { RunScore } from './scores.ts';
import { randomUUID } from 'node:crypto';
import { duration, isoSeconds, renderArtifact, transcriptChunks, usageText } from '../transcript.ts';

export interface RunPageData {
  run: Run;
  /** The run's events so far, oldest first. */
  events: RunEventDoc[];
  /** The runs this run started (their `parent_run_id` is this run). */
  children: Run[];
  parent?: Run;
  factoryName?: string;
  automationName?: string;
  /** The console page of the delivery that started the run, when it can be found. */
  deliveryHref?: string;
  /** The run's tree (root and every run below it), when it has a parent or children. */
  tree?: RunTree;
  /** The run's scores, once its scoring runs have ended. */
  scores?: readonly RunScore[];
  /** The webhook that delivery came to. */
  webhook?: { uid: string; name?: string };
  notice?: string;
  error?: string;
}

export const ACTIVE_STATES = new Set(['QUEUED', 'PENDING', 'CLAIMED', 'INPROGRESS', 'BLOCKED']);

const PROVIDER_SOURCES: Record<string, string> = { GITHUB_ACTION: 'GitHub', SLACK: 'Slack', LINEAR: 'Linear' };

/** What started the run, finer than the API's `source` (a webhook run is served as `API`). */
export function runSource(run: Run): string {
  return run.source_detail ?? run.source;
}

const enc = encodeURIComponent;

function header(_viewer: Viewer, d: RunPageData): SafeHtml {
  const { run } = d;
  return html`<p class="crumbs"><a href="/console/runs">Runs</a> /${d.factoryName !== undefined && run.factory_uid ? html` <a href="/console/factories/${enc(run.factory_uid)}">${d.factoryName}</a> /` : ''}</p>
  <h1>${run.title} <span id="run-state">${runState(run.state)}</span></h1>
  ${d.notice ? html`<p class="notice" role="status">${d.notice}</p>` : ''}
  ${d.error ? errorBox(d.error) : ''}`;
}

/**
 * What its concurrency key does to the run, in a few words: held because the key is full, cancelled by a newer
 * run of the key (linked), or only the key. Empty for a run with no key.
 */
export function concurrencyNote(run: Run): SafeHtml {
  const c = run.concurrency;
  if (!c) return html``;
  if (c.superseded_by)
    return html`cancelled by a newer run <a href="/console/runs/${enc(c.superseded_by)}"><code>${c.superseded_by}</code></a>`;
  if (run.state === 'QUEUED' && run.status_message?.message?.startsWith('queued: concurrency key'))
    return html`queued because of key <code>${c.key}</code> (limit ${c.limit})`;
  return html``;
}

/** Where the run comes from and where it leads: factory, automation, delivery, schedule, parent, children. */
function origin(d: RunPageData): SafeHtml {
  const { run } = d;
  const source = runSource(run);
  const provider = PROVIDER_SOURCES[source];
  const slug = source === 'GITHUB_ACTION' ? 'github' : source.toLowerCase();
  // A provider event's delivery has its page in the connection's log (the provider is the run's source).
  const deliveryHref =
    d.deliveryHref ??
    (provider && run.delivery_id ? `/console/integrations/${slug}/deliveries/${enc(run.delivery_id)}` : undefined);
  return html`
    <dt>Source</dt><dd id="run-source">${source}${provider ? html` · <a href="/console/integrations/${slug}/deliveries">${provider} connection</a>` : ''}</dd>
    ${run.factory_uid ? html`<dt>Factory</dt><dd><a href="/console/factories/${enc(run.factory_uid)}">${d.factoryName ?? run.factory_uid}</a></dd>` : ''}
    ${run.automation_id ? html`<dt>Automation</dt><dd>${run.factory_uid ? html`<a href="/console/factories/${enc(run.factory_uid)}#automation-${run.automation_id}">${d.automationName ?? run.automation_id}</a>` : html`<code>${run.automation_id}</code>`}</dd>` : ''}
    ${d.webhook ? html`<dt>Webhook</dt><dd><a href="/console/webhooks/${enc(d.webhook.uid)}">${d.webhook.name ?? d.webhook.uid}</a></dd>` : ''}
    ${run.delivery_id ? html`<dt>Delivery</dt><dd>${deliveryHref ? html`<a href="${deliveryHref}"><code>${run.delivery_id}</code></a>` : html`<code>${run.delivery_id}</code>`}</dd>` : ''}
    ${run.schedule ? html`<dt>Schedule</dt><dd><a href="/console/schedules#schedule-${run.schedule.schedule_id}">${run.schedule.schedule_name}</a> <code>${run.schedule.cron_schedule}</code></dd>` : ''}
    ${run.parent_run_id ? html`<dt>Started by</dt><dd><a href="/console/runs/${enc(run.parent_run_id)}">${d.parent?.title ?? run.parent_run_id}</a></dd>` : ''}
    ${d.children.length ? html`<dt>Started</dt><dd><ul class="plain">${d.children.map((c) => html`<li><a href="/console/runs/${enc(c.run_id)}">${c.title}</a> ${runState(c.state)}</li>`)}</ul></dd>` : ''}`;
}

function facts(_viewer: Viewer, d: RunPageData): SafeHtml {
  const { run } = d;
  const seconds = isoSeconds(run.run_time);
  return html`<dl class="facts">
    <dt>Run</dt><dd><code>${run.run_id}</code></dd>
    ${origin(d)}
    <dt>Creator</dt><dd>${run.creator?.display_name ?? '—'}</dd>
    <dt>Created</dt><dd>${timeAgo(run.created_at)}</dd>
    <dt>Status</dt><dd id="run-status">${run.status_message?.message ?? (ACTIVE_STATES.has(run.state) ? 'waiting' : '—')}</dd>
    ${run.concurrency ? html`<dt>Concurrency</dt><dd id="run-concurrency">key <code>${run.concurrency.key}</code>, limit ${run.concurrency.limit}${concurrencyNote(run).toString() ? html` · ${concurrencyNote(run)}` : ''}</dd>` : ''}
    <dt>Duration</dt><dd id="run-duration">${seconds !== undefined ? duration(seconds) : 'not started'}</dd>
    <dt>Usage</dt><dd id="run-usage">${run.request_usage ? usageText(run.request_usage) : 'none yet'}</dd>
  </dl>`;
}

function actions(_viewer: Viewer, d: RunPageData): SafeHtml {
  if (!ACTIVE_STATES.has(d.run.state)) return html``;
  return html`<p class="actions" data-while-active><a class="button danger" href="/console/runs/${enc(d.run.run_id)}/cancel">Cancel run…</a></p>`;
}

/**
 * Where the transcript's items go in the page's text, split there to stream them (`runPageStream`): random, so
 * that no text of the run (its title, its prompt) can hold it.
 */
const TRANSCRIPT_SLOT = `<!--${randomUUID()}-->`;

function transcript(_viewer: Viewer, d: RunPageData): SafeHtml {
  const last = d.events.at(-1)?.sequence ?? 0;
  // A run that never executed has no transcript yet: the live stream brings its state changes even when over.
  const ended = !ACTIVE_STATES.has(d.run.state) && d.events.length > 0;
  return html`<section aria-labelledby="transcript"><h2 id="transcript">Transcript</h2>
  <p class="muted" id="live-status" aria-live="polite">${ended ? `${d.events.length} events.` : 'Live: new events appear as the agent works.'}</p>
  <ol id="run-events" class="events" data-live-events="/console/runs/${enc(d.run.run_id)}/live?since=${last}"${ended ? html` data-ended="true"` : ''}>${new SafeHtml(TRANSCRIPT_SLOT)}</ol>
  ${ended ? '' : html`<noscript><p>Reload to see new events; the API streams them at <code>/api/v1/agent/runs/${d.run.run_id}/events</code>.</p></noscript>`}
  </section>`;
}

function artifacts(_viewer: Viewer, d: RunPageData): SafeHtml {
  const list = d.run.artifacts ?? [];
  return html`<section aria-labelledby="artifacts"><h2 id="artifacts">Artifacts</h2>
  <div id="artifact-list" class="artifacts">${list.length ? list.map(renderArtifact) : html`<p class="muted none">None.</p>`}</div>
  </section>`;
}

function followup(viewer: Viewer, d: RunPageData): SafeHtml {
  return html`<section aria-labelledby="followup"><h2 id="followup">Follow-up</h2>
  <form method="post" action="/console/runs/${enc(d.run.run_id)}/followups" class="stack narrow">${csrfField(viewer)}
    <label for="fu-message">Message</label><textarea id="fu-message" name="message" rows="3" required></textarea>
    <button type="submit">Send follow-up</button>
  </form></section>`;
}

function prompt(_viewer: Viewer, d: RunPageData): SafeHtml {
  return html`<section aria-labelledby="prompt"><h2 id="prompt">Prompt</h2><pre>${d.run.prompt}</pre></section>`;
}

function configuration(_viewer: Viewer, d: RunPageData): SafeHtml {
  return html`<section aria-labelledby="config"><h2 id="config">Configuration</h2>
  <details><summary>Agent configuration as resolved</summary><pre>${JSON.stringify(d.run.agent_config ?? {}, null, 2)}</pre></details></section>`;
}

export type RunSection = (viewer: Viewer, data: RunPageData) => SafeHtml;

/** The page's sections in order. */
export const runSections: RunSection[] = [
  header,
  facts,
  actions,
  (_viewer, d) => (d.tree ? html`${runTreeSection(d.tree, d.run.run_id)}` : html``),
  prompt,
  transcript,
  artifacts,
  (_viewer, d) => (d.scores?.length ? runScoresSection(d.scores) : html``),
  followup,
  configuration,
];

/**
 * The page in pieces, each rendered when asked for: everything before the transcript's items, the items 250 at a
 * time, then the rest. A long transcript's page starts arriving before its last item is rendered, and is never
 * one string of its whole length.
 */
export function* runPageStream(viewer: Viewer, data: RunPageData): Generator<string> {
  const body = html`${runSections.map((section) => section(viewer, data))}`;
  const whole = page({ title: data.run.title, viewer, section: 'runs', body });
  const at = whole.indexOf(TRANSCRIPT_SLOT);
  if (at < 0) {
    yield whole;
    return;
  }
  yield whole.slice(0, at);
  yield* transcriptChunks(data.events, 250);
  yield whole.slice(at + TRANSCRIPT_SLOT.length);
}

export function cancelConfirmPage(viewer: Viewer, run: Run): string {
  const body = html`<p class="crumbs"><a href="/console/runs">Runs</a> / <a href="/console/runs/${enc(run.run_id)}">${run.title}</a> /</p>
  <h1>Cancel run ${run.title}?</h1>
  <p>The run is ${runState(run.state)}. Cancelling stops its agent; the transcript so far is kept. A cancelled run cannot be resumed, but a follow-up starts it again.</p>
  <form method="post" action="/console/runs/${enc(run.run_id)}/cancel" class="inline">${csrfField(viewer)}<button type="submit" class="danger">Cancel run</button></form>
  <a href="/console/runs/${enc(run.run_id)}">Keep it running</a>`;
  return page({ title: `Cancel ${run.title}`, viewer, section: 'runs', body });
}
