import type { Delivery, PageInfo } from '../api-types.ts';
import { bytes, deliveryLabel, timeAgo } from '../format.ts';
import { html } from '../html.ts';
import { page } from '../layout.ts';
import type { Viewer } from '../layout.ts';

const NAMES: Record<string, string> = { github: 'GitHub', slack: 'Slack', linear: 'Linear' };

export interface ProviderDelivery extends Delivery {
  sender_delivery_id?: string;
}

/** A provider connection's delivery log: each event with its label, the provider's own id and why it was refused. */
export function providerDeliveriesPage(
  viewer: Viewer,
  data: { provider: string; deliveries: ProviderDelivery[]; pageInfo: PageInfo; older: boolean },
): string {
  const name = NAMES[data.provider] ?? data.provider;
  const body = html`<p class="crumbs"><a href="/console/integrations">Integrations</a> /</p>
  <h1>${name} deliveries</h1>
  <p class="muted">Newest first.${data.older ? html` <a href="/console/integrations/${data.provider}/deliveries">Back to the newest</a>.` : ''}</p>
  ${
    data.deliveries.length === 0
      ? html`<p class="muted">No deliveries.</p>`
      : html`<div class="scroll"><table><caption class="sr-only">${name} deliveries</caption>
    <thead><tr><th scope="col">Label</th><th scope="col">Delivery</th><th scope="col">${name}'s event ID</th><th scope="col">Why refused</th><th scope="col" class="num">Size</th><th scope="col">Received</th></tr></thead>
    <tbody>${data.deliveries.map(
      (
        d,
      ) => html`<tr id="${d.delivery_id}"><td>${deliveryLabel(d.label, d.status)}</td><td><code>${d.delivery_id}</code></td>
        <td>${d.sender_delivery_id ? html`<code>${d.sender_delivery_id}</code>` : '—'}</td><td>${d.reason ?? ''}</td>
        <td class="num">${bytes(d.size)}</td><td>${timeAgo(d.received_at)}</td></tr>`,
    )}</tbody></table></div>`
  }
  ${data.pageInfo.has_next_page && data.pageInfo.next_cursor ? html`<p><a href="/console/integrations/${data.provider}/deliveries?cursor=${encodeURIComponent(data.pageInfo.next_cursor)}">Older deliveries</a></p>` : ''}`;
  return page({ title: `${name} deliveries`, viewer, section: 'integrations', body });
}
