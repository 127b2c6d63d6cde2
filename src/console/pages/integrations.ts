import type { Connection } from '../api-types.ts';
import { badge, timeAgo } from '../format.ts';
import { html } from '../html.ts';
import { page } from '../layout.ts';
import type { Viewer } from '../layout.ts';

const PROVIDERS = ['github', 'slack', 'linear'] as const;
const NAMES: Record<string, string> = { github: 'GitHub', slack: 'Slack', linear: 'Linear' };

export function integrationsPage(viewer: Viewer, connections: Connection[]): string {
  const byProvider = new Map(connections.map((c) => [c.provider, c]));
  const body = html`<h1>Integrations</h1>
  <p>Provider events reach the factories whose triggers name them (<code>docs/integrations.md</code> says how to connect each).</p>
  <div class="cards">${PROVIDERS.map((provider) => {
    const c = byProvider.get(provider);
    if (!c) {
      return html`<section class="card" aria-labelledby="p-${provider}"><h2 id="p-${provider}">${NAMES[provider]}</h2>
        <p>${badge('not connected', 'idle')}</p><p class="muted">Connect with <code>PUT /api/v1/integrations/${provider}</code>.</p></section>`;
    }
    return html`<section class="card" aria-labelledby="p-${provider}"><h2 id="p-${provider}">${NAMES[provider]}</h2>
      <p>${c.last_error && (!c.last_event_at || (c.last_error_at ?? '') > c.last_event_at) ? badge('error', 'bad') : badge('connected', 'ok')}${c.mode ? html` <span class="muted">${c.mode}</span>` : ''}</p>
      <dl class="facts">
        <dt>Events URL</dt><dd><code>${c.events_url}</code></dd>
        <dt>Last event</dt><dd>${c.last_event ?? '—'} ${timeAgo(c.last_event_at)}</dd>
        <dt>Last error</dt><dd>${c.last_error ?? '—'}${c.last_error_at ? html` ${timeAgo(c.last_error_at)}` : ''}</dd>
        ${c.installations ? html`<dt>Installations</dt><dd>${c.installations.length ? c.installations.map((i, n) => html`${n ? ', ' : ''}${i.account_login ?? i.installation_id}`) : '—'}</dd>` : ''}
      </dl></section>`;
  })}</div>`;
  return page({ title: 'Integrations', viewer, section: 'integrations', body });
}
