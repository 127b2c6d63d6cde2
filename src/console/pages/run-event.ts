/**
 * One event of a run's transcript on its own page: where the run page's collapsed output, input or log links
 * (the run page sends a long body only when asked). What the event is, then its body in full.
 */
import type { Run, RunEventDoc } from '../api-types.ts';
import { html } from '../html.ts';
import { page } from '../layout.ts';
import type { Viewer } from '../layout.ts';
import { eventBody, eventBodyHtml } from '../transcript.ts';

const enc = encodeURIComponent;

export function runEventPage(viewer: Viewer, run: Run, event: RunEventDoc): string {
  const body = eventBody(event);
  const d = event.data;
  const tool = typeof d.name === 'string' ? d.name : undefined;
  const status = typeof d.status === 'string' ? d.status : undefined;
  const exit = typeof (d.output as { exit_code?: unknown } | undefined)?.exit_code === 'number';
  const title = `${body?.label ?? 'Event'}${tool ? ` of ${tool}` : ''}, event ${event.sequence}`;
  const runHref = `/console/runs/${enc(run.run_id)}`;
  const content = html`<p class="crumbs"><a href="/console/runs">Runs</a> / <a href="${runHref}">${run.title}</a> /</p>
  <h1>${title}</h1>
  <dl class="facts">
    <dt>Event</dt><dd>${event.sequence} · <code>${event.type}</code> · <a href="${runHref}${event.type === 'tool_result' ? '#transcript' : `#ev-${event.sequence}`}">back to the transcript</a></dd>
    <dt>Time</dt><dd><time datetime="${event.occurred_at}">${event.occurred_at}</time></dd>
    ${tool ? html`<dt>Tool</dt><dd><code>${tool}</code>${typeof d.id === 'string' ? html` (call <code>${d.id}</code>)` : ''}</dd>` : ''}
    ${status ? html`<dt>Status</dt><dd>${status}${exit ? html`, exit ${String((d.output as { exit_code: number }).exit_code)}` : ''}</dd>` : ''}
  </dl>
  <section aria-labelledby="event-body"><h2 id="event-body">${body ? `${body.label} in full` : 'Nothing more'}</h2>${eventBodyHtml(event)}</section>`;
  return page({ title: `${title} · ${run.title}`, viewer, section: 'runs', body: content });
}
