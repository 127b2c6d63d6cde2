/**
 * A run's events as a transcript: messages, tool calls with their output, states, usage, artifacts. The same
 * functions render the page's history on the server and each live event the console relays (routes.ts), so
 * the page shows an event the same way whether it was there at load or arrived later.
 */
import type { Artifact, RunEventDoc } from './api-types.ts';
import { badge, runState } from './format.ts';
import { html, SafeHtml } from './html.ts';
import { markdown } from './markdown.ts';

/**
 * A body longer than this (lines or characters) is collapsed. In the transcript it is not even sent: its event's
 * page (`eventHref`) shows it, and console.js loads it into the collapsed block when that is opened.
 */
const LONG_LINES = 4;
const LONG_CHARS = 400;

type Data = Record<string, unknown>;

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const obj = (v: unknown): Data | undefined =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Data) : undefined;

function item(e: RunEventDoc, kind: string, body: SafeHtml, extra?: SafeHtml): SafeHtml {
  return new SafeHtml(`<li class="ev ev-${kind}" id="ev-${Number(e.sequence)}"${extra?.text ?? ''}>${body.text}</li>`);
}

const ISO_TIME = /^\d{4}-\d\d-\d\dT(\d\d:\d\d:\d\d)(?:\.\d+)?Z$/;

// Built directly: a long transcript has one per event. The time of day (UTC), with the exact time in `datetime`,
// which console.js shows on hover and as "n minutes ago" (a title on each of thousands of events would double
// their bytes; parsing each date to say "ago" here would double their cost).
function when(e: RunEventDoc): SafeHtml {
  const clock = ISO_TIME.exec(e.occurred_at)?.[1];
  if (!clock) return html`<span class="at">${e.occurred_at}</span>`;
  return new SafeHtml(`<time datetime="${e.occurred_at}">${clock}</time>`);
}

/** The console page of one event of a run, which shows its long bodies in full. */
export function eventHref(e: RunEventDoc): string {
  return `/console/runs/${encodeURIComponent(e.run_id)}/events/${Number(e.sequence)}`;
}

function lineCount(text: string): number {
  let n = 1;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/**
 * A block of text shown as is, collapsed behind a summary when long. With `more` (the event's page), a long
 * block is not in the page at all: the collapsed block links to it, and console.js loads it when opened.
 */
export function collapsible(label: string, text: string, more?: string): SafeHtml {
  const lines = lineCount(text);
  if (lines <= LONG_LINES && text.length <= LONG_CHARS)
    return html`<pre class="out" aria-label="${label}">${text}</pre>`;
  const summary = html`<summary>${label} (${lines} line${lines === 1 ? '' : 's'})</summary>`;
  if (more)
    return html`<details class="out">${summary}<a class="more" href="${more}">Show the ${label.toLowerCase()}</a></details>`;
  return html`<details class="out">${summary}<pre>${text}</pre></details>`;
}

/** What a tool was asked, in one line: the command, the file, the query. */
export function toolSummary(input: Data): string {
  const command = input.command ?? input.cmd;
  if (typeof command === 'string') return command;
  if (Array.isArray(command)) return command.map(String).join(' ');
  for (const key of ['file_path', 'filepath', 'path', 'absolute_path', 'pattern', 'query', 'url', 'description']) {
    const v = str(input[key]);
    if (v) return v;
  }
  if (Array.isArray(input.changes)) {
    return input.changes
      .map((c) => str(obj(c)?.path) ?? '')
      .filter(Boolean)
      .join(', ');
  }
  const json = JSON.stringify(input);
  return json === '{}' ? '' : json.length > 160 ? `${json.slice(0, 159)}…` : json;
}

/** The text of content blocks (Claude's tool results, MCP results): text blocks joined, others as JSON. */
function blocksText(content: unknown): string | undefined {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return undefined;
  return content
    .map((b) => {
      const block = obj(b);
      if (block && typeof block.text === 'string') return block.text;
      if (block?.type === 'image') return '[image]';
      return JSON.stringify(b);
    })
    .join('\n');
}

/** A tool's output as text, from the shapes the harnesses report (docs/execution.md#events). */
export function toolOutputText(output: unknown): { text: string; exitCode?: number } {
  const o = obj(output);
  if (!o) return { text: output === undefined || output === null ? '' : JSON.stringify(output, null, 2) };
  const exitCode = num(o.exit_code);
  const parts: string[] = [];
  for (const key of ['output', 'stdout', 'stderr']) {
    const v = str(o[key]);
    if (v) parts.push(v);
  }
  const content = blocksText(o.content);
  if (content) parts.push(content);
  if (o.result !== undefined && o.result !== null) {
    const r = obj(o.result);
    parts.push(blocksText(r?.content) ?? (typeof o.result === 'string' ? o.result : JSON.stringify(o.result, null, 2)));
  }
  if (o.error !== undefined && o.error !== null) parts.push(`error: ${str(o.error) ?? JSON.stringify(o.error)}`);
  const known = new Set(['output', 'stdout', 'stderr', 'content', 'result', 'error', 'exit_code']);
  const rest = Object.fromEntries(Object.entries(o).filter(([k]) => !known.has(k)));
  if (Object.keys(rest).length) parts.push(JSON.stringify(rest, null, 2));
  return { text: parts.join('\n'), ...(exitCode !== undefined ? { exitCode } : {}) };
}

/** The output part of a tool call (its result event), filled in when the result arrives. */
export function toolResultBody(result: RunEventDoc): SafeHtml {
  const data = result.data;
  const status = str(data.status) ?? 'completed';
  const { text, exitCode } = toolOutputText(data.output);
  const tone = status === 'completed' ? 'ok' : status === 'denied' ? 'warn' : 'bad';
  return html`<div class="tool-result">${badge(status, tone)}${exitCode !== undefined ? html` <span class="muted">exit ${exitCode}</span>` : ''} ${text ? collapsible('Output', text, eventHref(result)) : html`<span class="muted">no output</span>`}</div>`;
}

function toolCall(e: RunEventDoc, result: RunEventDoc | undefined): SafeHtml {
  const d = e.data;
  const input = obj(d.input) ?? {};
  const summary = toolSummary(input);
  // The input is shown when it says more than the summary line (a command alone does not).
  const keys = Object.keys(input);
  const showInput = keys.length > 0 && !(keys.length === 1 && keys[0] === 'command' && input.command === summary);
  const body = html`<div class="ev-head"><span class="kind">${str(d.category) ?? 'tool'}</span><code class="tool">${str(d.name) ?? 'tool'}</code>${when(e)}</div>${summary ? html`<pre class="call">${summary}</pre>` : ''}${showInput ? toolInput(e, input) : ''}<div class="tool-slot">${result ? toolResultBody(result) : html`<span class="muted pending">running…</span>`}</div>`;
  return item(e, 'tool', body, html` data-tool="${str(d.id) ?? ''}"`);
}

/** The full input behind "Input": in the page when short, on the event's page when long. */
function toolInput(e: RunEventDoc, input: Data): SafeHtml {
  const full = JSON.stringify(input, null, 2);
  const long = full.length > LONG_CHARS || lineCount(full) > 3 * LONG_LINES;
  return html`<details class="input"><summary>Input</summary>${long ? html`<a class="more" href="${eventHref(e)}">Show the input</a>` : html`<pre>${full}</pre>`}</details>`;
}

function artifactLine(e: RunEventDoc): SafeHtml {
  const type = str(e.data.artifact_type) ?? 'artifact';
  const d = obj(e.data.data) ?? {};
  const name = str(d.title) ?? str(d.filename) ?? str(d.filepath) ?? str(d.url) ?? str(d.description) ?? '';
  const uid = str(d.artifact_uid);
  return item(
    e,
    'artifact',
    html`<div class="ev-head"><span class="kind">artifact</span>${type}${name ? html` <code>${name}</code>` : ''}${uid ? html` · <a href="#art-${uid}">show</a>` : ''}${when(e)}</div>`,
  );
}

/** One event as a transcript item; `results` holds the tool results by call id (shown inside their call). */
export function renderEvent(e: RunEventDoc, results?: Map<string, RunEventDoc>): SafeHtml {
  const d = e.data;
  switch (e.type) {
    case 'message': {
      const role = str(d.role) ?? 'assistant';
      return item(
        e,
        'message',
        html`<div class="ev-head"><span class="kind">${role === 'assistant' ? 'Agent' : role}</span>${when(e)}</div><div class="md">${markdown(str(d.text) ?? '')}</div>`,
      );
    }
    case 'followup':
      return item(
        e,
        'followup',
        html`<div class="ev-head"><span class="kind">Follow-up</span>${str(d.delivery) ? html`<span class="muted">${d.delivery === 'live' ? 'to the running agent' : 'as the next prompt'}</span>` : ''}${when(e)}</div><div class="md">${markdown(str(d.message) ?? '')}</div>`,
      );
    case 'tool_call':
      return toolCall(e, results?.get(str(d.id) ?? ''));
    case 'tool_result':
      // A result whose call is not in the log (or not yet rendered) stands alone.
      return item(
        e,
        'tool',
        html`<div class="ev-head"><span class="kind">${str(d.category) ?? 'tool'}</span><code class="tool">${str(d.name) ?? 'tool'}</code> result${when(e)}</div><div class="tool-slot">${toolResultBody(e)}</div>`,
        html` data-tool="${str(d.id) ?? ''}"`,
      );
    case 'state': {
      const message = str(obj(d.status_message)?.message);
      return item(
        e,
        'state',
        html`<div class="ev-head"><span class="kind">State</span>${runState(str(d.state) ?? '?')}${message ? html` <span>${message}</span>` : ''}${when(e)}</div>`,
      );
    }
    case 'status':
      return item(
        e,
        'status',
        html`<div class="ev-head"><span class="kind">Status</span><span>${str(d.message) ?? str(d.event_type) ?? ''}</span>${when(e)}</div>`,
      );
    case 'usage':
      return item(
        e,
        'usage',
        html`<div class="ev-head"><span class="kind">Usage</span>${usageText(d)}${when(e)}</div>`,
      );
    case 'result': {
      const failed = d.is_error === true;
      const text = str(d.text) ?? '';
      const turns = num(d.num_turns);
      const ms = num(d.duration_ms);
      return item(
        e,
        'result',
        html`<div class="ev-head"><span class="kind">Result</span>${badge(failed ? 'error' : 'done', failed ? 'bad' : 'ok')}${turns !== undefined ? html` <span class="muted">${turns} turns</span>` : ''}${ms !== undefined ? html` <span class="muted">${duration(ms / 1000)}</span>` : ''}${when(e)}</div>${text ? html`<div class="md">${markdown(text)}</div>` : ''}`,
      );
    }
    case 'session':
      return item(
        e,
        'session',
        html`<div class="ev-head"><span class="kind">Session</span><code>${str(d.session_id) ?? ''}</code>${str(d.model) ? html` <span class="muted">model ${d.model as string}</span>` : ''}${when(e)}</div>`,
      );
    case 'skill': {
      const reason = str(d.reason) ?? str(d.unresolved);
      return item(
        e,
        'skill',
        html`<div class="ev-head"><span class="kind">Skill</span><code>${str(d.name) ?? str(d.spec) ?? ''}</code> ${d.resolved === false || reason ? html`${badge('not loaded', 'warn')} ${reason ?? ''}` : badge('loaded', 'ok')}${when(e)}</div>`,
      );
    }
    case 'log':
      return item(
        e,
        'log',
        html`<div class="ev-head"><span class="kind">${str(d.stream) ?? 'log'}</span>${when(e)}</div>${collapsible('Log', str(d.text) ?? '', eventHref(e))}`,
      );
    case 'error':
      return item(
        e,
        'error',
        html`<div class="ev-head"><span class="kind">Error</span>${d.fatal === true ? badge('fatal', 'bad') : badge('error', 'warn')} <span>${str(d.message) ?? ''}</span>${when(e)}</div>`,
      );
    case 'artifact':
      return artifactLine(e);
    default:
      return item(
        e,
        'other',
        html`<div class="ev-head"><span class="kind">${e.type}</span>${when(e)}</div>${collapsible('Data', JSON.stringify(d, null, 2), eventHref(e))}`,
      );
  }
}

/** The history as one list: each tool result shown inside its call. */
export function renderTranscript(events: readonly RunEventDoc[]): SafeHtml {
  return new SafeHtml([...transcriptChunks(events, events.length || 1)].join(''));
}

/**
 * The history as pieces of `size` events each, rendered only as each is asked for (the run page is streamed):
 * each tool result shown inside its call.
 */
export function* transcriptChunks(events: readonly RunEventDoc[], size: number): Generator<string> {
  const calls = new Set<string>();
  const results = new Map<string, RunEventDoc>();
  for (const e of events) {
    const id = str(e.data.id);
    if (!id) continue;
    if (e.type === 'tool_call') calls.add(id);
    else if (e.type === 'tool_result' && calls.has(id)) results.set(id, e);
  }
  for (let start = 0; start < events.length; start += size) {
    const parts: string[] = [];
    for (const e of events.slice(start, start + size)) {
      if (e.type === 'tool_result' && results.get(str(e.data.id) ?? '') === e) continue;
      parts.push(renderEvent(e, results).text);
    }
    yield parts.join('');
  }
}

/** 12,345: `toLocaleString` is slow for a transcript's hundreds of usage events. */
function thousands(n: number): string {
  return String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

export function usageText(u: Data): string {
  const input = num(u.input_tokens) ?? 0;
  const output = num(u.output_tokens) ?? 0;
  const cached = num(u.cached_input_tokens);
  const cost = num(u.cost_usd) ?? num(u.inference_cost_usd);
  return `${thousands(input)} input${cached ? ` (${thousands(cached)} cached)` : ''}, ${thousands(output)} output tokens${cost !== undefined ? `, $${cost.toFixed(4)}` : ''}`;
}

/** `2 h 3 min`, `4 min 5 s`, `6 s`. */
export function duration(totalSeconds: number): string {
  const s = Math.max(0, Math.round(totalSeconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  if (h) return `${h} h ${m} min`;
  if (m) return `${m} min ${sec} s`;
  return `${sec} s`;
}

/** An ISO 8601 duration (`PT1H2M3S`, the API's `run_time`) in seconds. */
export function isoSeconds(iso: string | undefined): number | undefined {
  const m = iso ? /^PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?$/.exec(iso) : null;
  if (!m) return undefined;
  return Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0);
}

const SAFE_LINK = /^https?:\/\//i;

/** One artifact by its type: a plan as Markdown, a file as a download, a screenshot inline, a pull request as a link. */
export function renderArtifact(a: Artifact): SafeHtml {
  const d = a.data ?? {};
  const uid = str(d.artifact_uid);
  const id = uid ? html` id="art-${uid}"` : '';
  const description = str(d.description);
  const desc = description ? html`<p>${description}</p>` : '';
  switch (a.artifact_type) {
    case 'PLAN':
      return html`<article class="artifact plan"${id}><h3>Plan${str(d.title) ? html`: ${d.title as string}` : ''}</h3><div class="md">${markdown(str(d.content) ?? '')}</div></article>`;
    case 'FILE': {
      const name = str(d.filename) ?? str(d.filepath) ?? 'file';
      const size = num(d.size_bytes);
      return html`<article class="artifact file"${id}><h3>File <code>${str(d.filepath) ?? name}</code></h3>${desc}
        <p>${uid ? html`<a href="/console/artifacts/${uid}/download" download="${name}">Download ${name}</a>` : html`<span class="muted">no content stored</span>`}${size !== undefined ? html` <span class="muted">${size.toLocaleString('en')} bytes</span>` : ''}${str(d.mime_type) ? html` <span class="muted">${d.mime_type as string}</span>` : ''}</p></article>`;
    }
    case 'SCREENSHOT':
      return html`<article class="artifact screenshot"${id}><h3>Screenshot</h3>
        ${uid ? html`<a href="/console/artifacts/${uid}/view"><img src="/console/artifacts/${uid}/view" alt="${description ?? 'Screenshot the agent took'}" loading="lazy"></a>` : html`<p class="muted">no image stored</p>`}${desc}</article>`;
    case 'PULL_REQUEST': {
      const url = str(d.url) ?? '';
      return html`<article class="artifact pr"${id}><h3>Pull request</h3><p>${SAFE_LINK.test(url) ? html`<a href="${url}" rel="noopener noreferrer">${url}</a>` : html`<code>${url}</code>`}${str(d.branch) ? html` from branch <code>${d.branch as string}</code>` : ''}</p></article>`;
    }
    default:
      return html`<article class="artifact"${id}><h3>${a.artifact_type}</h3>${collapsible('Data', JSON.stringify(d, null, 2))}</article>`;
  }
}

/** The long body of an event, shown in full on its own page: a tool's output or input, a log's text, data. */
export function eventBody(e: RunEventDoc): { label: string; text: string } | undefined {
  const d = e.data;
  switch (e.type) {
    case 'tool_result':
      return { label: 'Output', text: toolOutputText(d.output).text };
    case 'tool_call':
      return { label: 'Input', text: JSON.stringify(obj(d.input) ?? {}, null, 2) };
    case 'log':
      return { label: 'Log', text: str(d.text) ?? '' };
    case 'message':
    case 'followup':
    case 'result':
    case 'state':
    case 'status':
    case 'usage':
    case 'session':
    case 'skill':
    case 'error':
    case 'artifact':
      return undefined;
    default:
      return { label: 'Data', text: JSON.stringify(d, null, 2) };
  }
}

/** An event's long body in full, as a fragment the run page loads into its collapsed block. */
export function eventBodyHtml(e: RunEventDoc): SafeHtml {
  const body = eventBody(e);
  if (!body) return html`<p class="muted">This event has nothing more to show.</p>`;
  return html`<pre class="out" aria-label="${body.label}">${body.text}</pre>`;
}
