import type { Connection } from '../api-types.ts';
import { badge, timeAgo } from '../format.ts';
import { html } from '../html.ts';
import type { SafeHtml } from '../html.ts';
import { csrfField, errorBox, page } from '../layout.ts';
import type { Viewer } from '../layout.ts';

export const PROVIDERS = ['github', 'slack', 'linear'] as const;
export type ProviderName = (typeof PROVIDERS)[number];
const NAMES: Record<string, string> = { github: 'GitHub', slack: 'Slack', linear: 'Linear' };

/** The connect form's fields per provider: each names a secret of the team (docs/integrations.md). */
export const CONNECT_FIELDS: Record<ProviderName, [string, string, boolean][]> = {
  github: [
    ['webhook_secret_name', 'Webhook secret (secret name)', true],
    ['app_id', 'App ID (mode app)', false],
    ['private_key_secret_name', 'App private key (secret name, mode app)', false],
  ],
  slack: [
    ['signing_secret_name', 'Signing secret (secret name)', true],
    ['bot_token_secret_name', 'Bot token (secret name)', false],
  ],
  linear: [
    ['webhook_secret_name', 'Webhook secret (secret name)', true],
    ['api_key_secret_name', 'API key (secret name)', false],
  ],
};

function connectForm(viewer: Viewer, provider: ProviderName, c: Connection | undefined): SafeHtml {
  if (viewer.role !== 'admin') return html``;
  return html`<details${c ? '' : html` open`}><summary>${c ? 'Change the connection' : `Connect ${NAMES[provider]}`}</summary>
    <form method="post" action="/console/integrations/${provider}" class="stack">${csrfField(viewer)}
    ${
      provider === 'github'
        ? html`<label for="${provider}-mode">Mode</label><select id="${provider}-mode" name="mode"><option value="webhook" ${c?.mode !== 'app' ? html`selected` : ''}>webhook (a repository or organisation webhook)</option><option value="app" ${c?.mode === 'app' ? html`selected` : ''}>app (a GitHub App)</option></select>`
        : ''
    }
    ${CONNECT_FIELDS[provider].map(([name, label, required]) => html`<label for="${provider}-${name}">${label}</label><input id="${provider}-${name}" name="${name}"${required ? html` required` : ''}>`)}
    <button type="submit">${c ? 'Save connection' : 'Connect'}</button></form></details>
    ${c ? html`<p><a class="button small danger" href="/console/integrations/${provider}/disconnect">Disconnect…</a></p>` : ''}`;
}

export function integrationsPage(
  viewer: Viewer,
  connections: Connection[],
  message?: { notice?: string; error?: string },
): string {
  const byProvider = new Map(connections.map((c) => [c.provider, c]));
  const body = html`<h1>Integrations</h1>
  <p>Provider events reach the factories whose triggers name them (<code>docs/integrations.md</code> says how to set up each provider's side).</p>
  ${message?.notice ? html`<p class="notice" role="status">${message.notice}</p>` : ''}
  ${message?.error ? errorBox(message.error) : ''}
  <div class="cards">${PROVIDERS.map((provider) => {
    const c = byProvider.get(provider);
    if (!c) {
      return html`<section class="card" aria-labelledby="p-${provider}"><h2 id="p-${provider}">${NAMES[provider]}</h2>
        <p>${badge('not connected', 'idle')}</p>${connectForm(viewer, provider, c)}</section>`;
    }
    return html`<section class="card" aria-labelledby="p-${provider}"><h2 id="p-${provider}">${NAMES[provider]}</h2>
      <p>${c.last_error && (!c.last_event_at || (c.last_error_at ?? '') > c.last_event_at) ? badge('error', 'bad') : badge('connected', 'ok')}${c.mode ? html` <span class="muted">${c.mode}</span>` : ''}</p>
      <dl class="facts">
        <dt>Events URL</dt><dd><code>${c.events_url}</code></dd>
        <dt>Last event</dt><dd>${c.last_event ?? '—'} ${timeAgo(c.last_event_at)}</dd>
        <dt>Last error</dt><dd>${c.last_error ?? '—'}${c.last_error_at ? html` ${timeAgo(c.last_error_at)}` : ''}</dd>
        <dt>Deliveries</dt><dd><a href="/console/integrations/${provider}/deliveries">${NAMES[provider]} delivery log</a></dd>
        ${c.installations ? html`<dt>Installations</dt><dd>${c.installations.length ? c.installations.map((i, n) => html`${n ? ', ' : ''}${i.account_login ?? i.installation_id}`) : '—'}</dd>` : ''}
      </dl>
      ${connectForm(viewer, provider, c)}</section>`;
  })}</div>`;
  return page({ title: 'Integrations', viewer, section: 'integrations', body });
}
