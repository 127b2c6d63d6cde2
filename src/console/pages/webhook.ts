import type { Automation, Delivery, PageInfo, Webhook } from '../api-types.ts';
import { badge, bytes, deliveryLabel, runState, timeAgo } from '../format.ts';
import { html } from '../html.ts';
import type { SafeHtml } from '../html.ts';
import { csrfField, errorBox, page } from '../layout.ts';
import type { Viewer } from '../layout.ts';

export interface TestFilterResult {
  result: string;
  webhook_check: { passed: boolean; detail: string; path?: string };
  payload_check: { passed: boolean; detail: string; path?: string };
}

export interface Lockout {
  sender_ip: string;
  until: string;
  reason: string;
}

/** Senders refused with 429 for failed authentications: who, until when and why. */
export function lockoutBox(lockouts: readonly Lockout[]): SafeHtml {
  if (lockouts.length === 0) return html``;
  return html`<section class="error" id="auth-lockout" aria-labelledby="lockout-title">
    <h2 id="lockout-title">Auth lockout: ${lockouts.length === 1 ? 'a sender is' : `${lockouts.length} senders are`} refused with 429</h2>
    <ul class="plain">${lockouts.map(
      (l) =>
        html`<li><code>${l.sender_ip || '(no address)'}</code> until ${l.until.replace('T', ' ').replace(/(\.\d+)?Z$/, ' UTC')} (${timeAgo(l.until)}): ${l.reason}.</li>`,
    )}</ul>
    <p>Check the secret the sender signs with; its deliveries are refused before they are logged until then.</p>
  </section>`;
}

export interface WebhookPageData {
  webhook: Webhook;
  factoryName: string | undefined;
  deliveries: Delivery[];
  pageInfo: PageInfo;
  automations: Automation[];
  /** Showing an older page of the log (a cursor): it is not refreshed live. */
  older?: boolean;
  /** The senders the webhook refuses now for failed authentications (429): `GET /webhooks/{uid}/lockouts`. */
  lockouts: Lockout[];
  test?: { automation: string; delivery: string; result?: TestFilterResult; error?: string };
}

export function deliveryRow(webhookUid: string, d: Delivery): SafeHtml {
  return html`<tr data-delivery="${d.delivery_id}">
    <td>${deliveryLabel(d.label, d.status)}</td>
    <td><a href="/console/webhooks/${webhookUid}/deliveries/${d.delivery_id}"><code>${d.delivery_id}</code></a></td>
    <td class="num">${bytes(d.size)}</td>
    <td>${timeAgo(d.received_at)}</td>
  </tr>`;
}

function check(name: string, c: { passed: boolean; detail: string; path?: string }): SafeHtml {
  return html`<li>${badge(c.passed ? 'passed' : 'failed', c.passed ? 'ok' : 'bad')} ${name}: ${c.detail}${c.path !== undefined && !c.passed ? html` (at <code>${c.path || '/'}</code>)` : ''}</li>`;
}

export function webhookPage(viewer: Viewer, data: WebhookPageData): string {
  const w = data.webhook;
  const body = html`<p class="crumbs"><a href="/">Factories</a> / ${w.factory_id ? html`<a href="/console/factories/${w.factory_id}">${data.factoryName ?? w.factory_id}</a> /` : ''}</p>
  <h1>Webhook ${w.name} ${w.enabled ? badge('enabled', 'ok') : badge('disabled', 'idle')}</h1>
  <dl class="facts">
    <dt>Ingress URL</dt><dd><code>${w.ingress_url}</code>${w.auth_mode === 'url_token' ? html` <span class="muted">({token} stands for the secret)</span>` : ''}</dd>
    <dt>Authentication</dt><dd>${w.auth_mode}${w.signature_scheme ? html`, scheme <code>${w.signature_scheme}</code>` : ''}</dd>
    <dt>Secret</dt><dd>${w.secret_name ? html`<code>${w.secret_name}</code>` : '—'}</dd>
    <dt>File</dt><dd><code>${w.file}</code></dd>
  </dl>
  ${lockoutBox(data.lockouts)}
  <section aria-labelledby="deliveries"><h2 id="deliveries">Deliveries</h2>
  ${
    data.older
      ? html`<p class="muted" id="live-status">Older deliveries, newest first. <a href="/console/webhooks/${w.uid}">Back to the newest</a> (which update live).</p>`
      : html`<p class="muted" id="live-status" aria-live="polite">Newest first; new deliveries appear here as they arrive.</p>`
  }
  <div class="scroll"><table id="delivery-log"${data.older ? '' : html` data-live-deliveries="/console/webhooks/${w.uid}/deliveries.html"`}>
    <thead><tr><th scope="col">Label</th><th scope="col">Delivery</th><th scope="col" class="num">Size</th><th scope="col">Received</th></tr></thead>
    <tbody>${data.deliveries.map((d) => deliveryRow(w.uid, d))}</tbody>
  </table></div>
  ${data.pageInfo.has_next_page && data.pageInfo.next_cursor ? html`<p><a href="/console/webhooks/${w.uid}?cursor=${encodeURIComponent(data.pageInfo.next_cursor)}">Older deliveries</a></p>` : ''}
  </section>
  <section aria-labelledby="test"><h2 id="test">Test filter</h2>
  <p>Would an automation fire for a stored delivery? Both checks are shown: the webhook trigger and the payload filter.</p>
  ${
    data.automations.length === 0
      ? html`<p class="muted">No automation of this factory listens to this webhook.</p>`
      : html`<form method="post" action="/console/webhooks/${w.uid}/test-filter" class="stack narrow">
    ${csrfField(viewer)}
    <label for="tf-automation">Automation</label>
    <select id="tf-automation" name="automation">${data.automations.map((a) => html`<option value="${a.id}" ${data.test?.automation === a.id ? html`selected` : ''}>${a.name}</option>`)}</select>
    <label for="tf-delivery">Delivery ID</label>
    <input id="tf-delivery" name="delivery" required value="${data.test?.delivery ?? data.deliveries.find((d) => d.status === 'accepted')?.delivery_id ?? ''}">
    <button type="submit">Test filter</button>
  </form>`
  }
  ${data.test?.error ? errorBox(data.test.error) : ''}
  ${
    data.test?.result
      ? html`<div class="card" role="status"><p><strong>${data.test.result.result}</strong></p><ul class="plain">${check('Webhook check', data.test.result.webhook_check)}${check('Payload check', data.test.result.payload_check)}</ul></div>`
      : ''
  }
  </section>`;
  return page({ title: `Webhook ${w.name}`, viewer, section: 'overview', body });
}

export interface DeliveryDetail extends Delivery {
  evaluation?: 'pending' | 'evaluated';
  evaluated_at?: string;
  runs?: { run_id: string; automation_id: string }[];
  errors?: { automation_id: string; error: string }[];
  duplicate_of?: string;
  replay_of?: string;
  replayed_by?: string;
}

export interface DeliveryPageData {
  webhook: Webhook;
  delivery: DeliveryDetail;
  /** What a replay just did, or why it could not (from the redirect after POST …/replay). */
  notice?: string;
  error?: string;
  payload: string | undefined;
  /** Each automation on this webhook, tested against the delivery as the evaluator would. */
  evaluations: { automation: Automation; result?: TestFilterResult; error?: string }[];
  /** The runs it started, with their titles and states when the API still has them. */
  runs: { run_id: string; automation_id: string; title?: string; state?: string }[];
}

function evaluationRow(e: DeliveryPageData['evaluations'][number]): SafeHtml {
  const r = e.result;
  const verdict = r ? badge(r.result, r.result === 'Would trigger' ? 'ok' : 'warn') : badge('not tested', 'idle');
  const failing =
    r && !r.payload_check.passed ? r.payload_check : r && !r.webhook_check.passed ? r.webhook_check : undefined;
  return html`<tr><th scope="row"><code>${e.automation.name}</code></th><td>${verdict}</td>
    <td>${failing ? html`${failing.detail}${failing.path !== undefined ? html` (at <code>${failing.path || '/'}</code>)` : ''}` : (e.error ?? (r ? 'both checks pass' : ''))}</td></tr>`;
}

export function deliveryPage(viewer: Viewer, data: DeliveryPageData): string {
  const { webhook, delivery, payload } = data;
  let pretty = payload;
  if (payload !== undefined) {
    try {
      pretty = JSON.stringify(JSON.parse(payload), null, 2);
    } catch {
      // shown as sent
    }
  }
  const rejected = delivery.status !== 'accepted' && delivery.status !== 'duplicate';
  const body = html`<p class="crumbs"><a href="/">Factories</a> / ${webhook.factory_id ? html`<a href="/console/factories/${webhook.factory_id}">Factory</a> / ` : ''}<a href="/console/webhooks/${webhook.uid}">Webhook ${webhook.name}</a> /</p>
  <h1>Delivery <code>${delivery.delivery_id}</code></h1>
  ${data.notice ? html`<p class="notice" role="status">${data.notice}</p>` : ''}
  ${data.error ? errorBox(data.error) : ''}
  ${delivery.status === 'accepted' && viewer.role === 'admin' ? html`<div class="actions"><a class="button" href="/console/webhooks/${webhook.uid}/deliveries/${delivery.delivery_id}/replay">Replay…</a></div>` : ''}
  <dl class="facts"><dt>Label</dt><dd>${deliveryLabel(delivery.label, delivery.status)}</dd>
  ${delivery.reason ? html`<dt>${rejected ? 'Why it was rejected' : 'Note'}</dt><dd>${delivery.reason}</dd>` : ''}
  ${delivery.replay_of ? html`<dt>Replay of</dt><dd><a href="/console/webhooks/${webhook.uid}/deliveries/${delivery.replay_of}"><code>${delivery.replay_of}</code></a>${delivery.replayed_by ? html` (replayed by <code>${delivery.replayed_by}</code>)` : ''}</dd>` : ''}
  ${delivery.duplicate_of ? html`<dt>Repeats</dt><dd><a href="/console/webhooks/${webhook.uid}/deliveries/${delivery.duplicate_of}"><code>${delivery.duplicate_of}</code></a></dd>` : ''}
  <dt>Size</dt><dd>${bytes(delivery.size)}</dd><dt>Received</dt><dd>${timeAgo(delivery.received_at)}</dd>
  ${delivery.evaluation ? html`<dt>Evaluation</dt><dd>${delivery.evaluation === 'pending' ? badge('pending', 'busy') : html`${badge('evaluated', 'ok')} ${timeAgo(delivery.evaluated_at)}`}</dd>` : ''}
  </dl>
  <section aria-labelledby="started"><h2 id="started">Runs it started</h2>
  ${data.runs.length ? html`<ul class="plain">${data.runs.map((r) => html`<li><a href="/console/runs/${r.run_id}">${r.title ?? r.run_id}</a> ${r.state ? runState(r.state) : ''} <code class="muted">${r.run_id}</code></li>`)}</ul>` : html`<p class="muted">${rejected ? 'None: a rejected delivery starts nothing.' : 'None.'}</p>`}
  ${delivery.errors?.length ? html`<ul class="plain">${delivery.errors.map((e) => html`<li>${badge('error', 'bad')} automation <code>${e.automation_id}</code>: ${e.error}</li>`)}</ul>` : ''}
  </section>
  <section aria-labelledby="evaluated"><h2 id="evaluated">Automations on this webhook</h2>
  ${
    data.evaluations.length === 0
      ? html`<p class="muted">No automation listens to this webhook.</p>`
      : rejected
        ? html`<p class="muted">A rejected delivery is not evaluated (it keeps no payload).</p>`
        : html`<div class="scroll"><table><caption class="sr-only">Each automation tested against this delivery now</caption><thead><tr><th scope="col">Automation</th><th scope="col">Against this delivery</th><th scope="col">Why</th></tr></thead><tbody>${data.evaluations.map(evaluationRow)}</tbody></table></div>`
  }
  </section>
  <h2>Payload</h2>
  ${pretty === undefined ? html`<p class="muted">Only accepted deliveries keep their payload.</p>` : html`<pre class="payload">${pretty}</pre>`}`;
  return page({ title: `Delivery ${delivery.delivery_id}`, viewer, section: 'overview', body });
}
