import type { Delivery, PageInfo } from '../api-types.ts';
import { badge, bytes, deliveryLabel, runState, timeAgo } from '../format.ts';
import { html } from '../html.ts';
import type { SafeHtml } from '../html.ts';
import { errorBox, page } from '../layout.ts';
import type { Viewer } from '../layout.ts';
import { lockoutBox } from './webhook.ts';
import type { Lockout } from './webhook.ts';

const NAMES: Record<string, string> = { github: 'GitHub', slack: 'Slack', linear: 'Linear' };

export interface ProviderDelivery extends Delivery {
  sender_delivery_id?: string;
  skipped_reasons?: string[];
}

const deliveriesUrl = (provider: string) => `/console/integrations/${provider}/deliveries`;
export const providerDeliveryUrl = (provider: string, id: string) =>
  `${deliveriesUrl(provider)}/${encodeURIComponent(id)}`;

/** A provider connection's delivery log: each event with its label, the provider's own id and why it was refused. */
export function providerDeliveriesPage(
  viewer: Viewer,
  data: { provider: string; deliveries: ProviderDelivery[]; pageInfo: PageInfo; older: boolean; lockouts: Lockout[] },
): string {
  const name = NAMES[data.provider] ?? data.provider;
  const body = html`<p class="crumbs"><a href="/console/integrations">Integrations</a> /</p>
  <h1>${name} deliveries</h1>
  ${lockoutBox(data.lockouts)}
  <p class="muted">Newest first; each delivery links to its page.${data.older ? html` <a href="${deliveriesUrl(data.provider)}">Back to the newest</a>.` : ''}</p>
  ${
    data.deliveries.length === 0
      ? html`<p class="muted">No deliveries.</p>`
      : html`<div class="scroll"><table><caption class="sr-only">${name} deliveries</caption>
    <thead><tr><th scope="col">Label</th><th scope="col">Delivery</th><th scope="col">${name}'s event ID</th><th scope="col">Why refused or skipped</th><th scope="col" class="num">Size</th><th scope="col">Received</th></tr></thead>
    <tbody>${data.deliveries.map(
      (
        d,
      ) => html`<tr id="${d.delivery_id}"><td>${deliveryLabel(d.label, d.status)}</td><td><a href="${providerDeliveryUrl(data.provider, d.delivery_id)}"><code>${d.delivery_id}</code></a></td>
        <td>${d.sender_delivery_id ? html`<code>${d.sender_delivery_id}</code>` : '—'}</td><td>${d.reason ?? d.skipped_reasons?.join('; ') ?? ''}</td>
        <td class="num">${bytes(d.size)}</td><td>${timeAgo(d.received_at)}</td></tr>`,
    )}</tbody></table></div>`
  }
  ${data.pageInfo.has_next_page && data.pageInfo.next_cursor ? html`<p><a href="${deliveriesUrl(data.provider)}?cursor=${encodeURIComponent(data.pageInfo.next_cursor)}">Older deliveries</a></p>` : ''}`;
  return page({ title: `${name} deliveries`, viewer, section: 'integrations', body });
}

export interface ProviderCheck {
  passed: boolean;
  detail: string;
  path?: string;
}

/** One automation against the delivery: `GET /integrations/{provider}/deliveries/{id}/automations`. */
export interface ProviderEvaluation {
  automation_id: string;
  automation_name: string;
  factory_id: string;
  factory_name: string;
  result: string;
  event_check: ProviderCheck;
  filter_check: ProviderCheck;
  policy?: string;
}

export interface ProviderDeliveryDetail extends ProviderDelivery {
  payload?: unknown;
  evaluation?: 'pending' | 'evaluated';
  evaluated_at?: string;
  runs: { run_id: string; automation_id: string }[];
  errors?: { automation_id: string; error: string }[];
  skipped?: { automation_id: string; reason: string }[];
  duplicate_of?: string;
  replay_of?: string;
  replayed_by?: string;
}

export interface ProviderDeliveryPageData {
  provider: string;
  delivery: ProviderDeliveryDetail;
  /** The events the delivery means and each automation tested against it now; undefined when it has no payload. */
  test?: { events: string[]; automations: ProviderEvaluation[] };
  /** Why the automations could not be tested (the API's reason). */
  testError?: string;
  runs: { run_id: string; automation_id: string; title?: string; state?: string }[];
  notice?: string;
  error?: string;
}

function evaluationRow(e: ProviderEvaluation): SafeHtml {
  const failing = !e.event_check.passed ? e.event_check : !e.filter_check.passed ? e.filter_check : undefined;
  const why = failing
    ? html`${failing.detail}${failing.path ? html` (at <code>${failing.path}</code>)` : ''}`
    : e.policy
      ? html`${e.policy}`
      : html`${e.filter_check.detail}`;
  return html`<tr><th scope="row"><a href="/console/factories/${e.factory_id}#automation-${e.automation_id}"><code>${e.automation_name}</code></a> <span class="muted">(${e.factory_name})</span></th>
    <td>${badge(e.result, e.result === 'Would trigger' ? 'ok' : 'warn')}</td><td>${why}</td></tr>`;
}

/** One provider delivery: why it was refused, what its event means to each automation now, the runs it started. */
export function providerDeliveryPage(viewer: Viewer, data: ProviderDeliveryPageData): string {
  const { provider, delivery: d } = data;
  const name = NAMES[provider] ?? provider;
  const rejected = d.status !== 'accepted' && d.status !== 'duplicate';
  const names = new Map((data.test?.automations ?? []).map((a) => [a.automation_id, a.automation_name]));
  const automation = (id: string) => html`<code>${names.get(id) ?? id}</code>`;
  const body = html`<p class="crumbs"><a href="/console/integrations">Integrations</a> / <a href="${deliveriesUrl(provider)}">${name} deliveries</a> /</p>
  <h1>${name} delivery <code>${d.delivery_id}</code></h1>
  ${data.notice ? html`<p class="notice" role="status">${data.notice}</p>` : ''}
  ${data.error ? errorBox(data.error) : ''}
  ${d.status === 'accepted' && viewer.role === 'admin' ? html`<div class="actions"><a class="button" href="${providerDeliveryUrl(provider, d.delivery_id)}/replay">Replay…</a></div>` : ''}
  <dl class="facts"><dt>Label</dt><dd>${deliveryLabel(d.label, d.status)}</dd>
  ${d.reason ? html`<dt>${rejected ? 'Why it was rejected' : 'Note'}</dt><dd>${d.reason}</dd>` : ''}
  ${d.sender_delivery_id ? html`<dt>${name}'s event ID</dt><dd><code>${d.sender_delivery_id}</code></dd>` : ''}
  ${data.test ? html`<dt>Event</dt><dd>${data.test.events.length ? data.test.events.map((e, i) => html`${i ? ', ' : ''}<code>${e}</code>`) : html`<span class="muted">none that a trigger takes</span>`}</dd>` : ''}
  ${d.replay_of ? html`<dt>Replay of</dt><dd><a href="${providerDeliveryUrl(provider, d.replay_of)}"><code>${d.replay_of}</code></a>${d.replayed_by ? html` (replayed by <code>${d.replayed_by}</code>)` : ''}</dd>` : ''}
  ${d.duplicate_of ? html`<dt>Repeats</dt><dd><a href="${providerDeliveryUrl(provider, d.duplicate_of)}"><code>${d.duplicate_of}</code></a></dd>` : ''}
  <dt>Size</dt><dd>${bytes(d.size)}</dd><dt>Received</dt><dd>${timeAgo(d.received_at)}</dd>
  ${d.evaluation ? html`<dt>Evaluation</dt><dd>${d.evaluation === 'pending' ? badge('pending', 'busy') : html`${badge('evaluated', 'ok')} ${timeAgo(d.evaluated_at)}`}</dd>` : ''}
  </dl>
  <section aria-labelledby="started"><h2 id="started">Runs it started</h2>
  ${data.runs.length ? html`<ul class="plain">${data.runs.map((r) => html`<li><a href="/console/runs/${r.run_id}">${r.title ?? r.run_id}</a> ${r.state ? runState(r.state) : ''} <code class="muted">${r.run_id}</code></li>`)}</ul>` : html`<p class="muted">${rejected ? 'None: a rejected delivery starts nothing.' : 'None.'}</p>`}
  ${d.skipped?.length ? html`<ul class="plain">${d.skipped.map((k) => html`<li>${badge('skipped', 'warn')} automation ${automation(k.automation_id)}: ${k.reason}</li>`)}</ul>` : ''}
  ${d.errors?.length ? html`<ul class="plain">${d.errors.map((e) => html`<li>${badge('error', 'bad')} automation ${automation(e.automation_id)}: ${e.error}</li>`)}</ul>` : ''}
  </section>
  <section aria-labelledby="evaluated"><h2 id="evaluated">Automations with a ${name} trigger</h2>
  ${
    rejected
      ? html`<p class="muted">A rejected delivery is not evaluated (it keeps no payload).</p>`
      : data.testError
        ? errorBox(data.testError)
        : !data.test || data.test.automations.length === 0
          ? html`<p class="muted">No automation of this team has a ${name} trigger.</p>`
          : html`<p>Each tested against this delivery now, as the evaluator would: the event, the filter, the factory's trigger policy.</p>
      <div class="scroll"><table><caption class="sr-only">Each automation tested against this delivery now</caption><thead><tr><th scope="col">Automation</th><th scope="col">Against this delivery</th><th scope="col">Why</th></tr></thead><tbody>${data.test.automations.map(evaluationRow)}</tbody></table></div>`
  }
  </section>
  <h2>Payload</h2>
  ${d.payload === undefined ? html`<p class="muted">Only accepted deliveries keep their payload.</p>` : html`<pre class="payload">${JSON.stringify(d.payload, null, 2)}</pre>`}`;
  return page({ title: `${name} delivery ${d.delivery_id}`, viewer, section: 'integrations', body });
}
