import { badge, timeAgo } from '../format.ts';
import { html } from '../html.ts';
import { csrfField, errorBox, page } from '../layout.ts';
import type { Viewer } from '../layout.ts';

export interface ApiKeyItem {
  id: string;
  name: string;
  prefix: string;
  role: 'admin' | 'member';
  instance_admin: boolean;
  principal: { uid: string; type: string; display_name: string };
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
}

/** The team's API keys by prefix: create one (shown once), revoke one. */
export function apiKeysPage(
  viewer: Viewer,
  data: { keys: ApiKeyItem[]; created?: { name: string; key: string }; notice?: string; error?: string },
): string {
  const body = html`<h1>API keys</h1>
  ${data.notice ? html`<p class="notice" role="status">${data.notice}</p>` : ''}
  ${data.error ? errorBox(data.error) : ''}
  ${
    data.created
      ? html`<div class="notice" role="status"><p>Key <strong>${data.created.name}</strong> created. It is shown this once; copy it now:</p><p><code class="secret">${data.created.key}</code></p></div>`
      : ''
  }
  <div class="scroll"><table><caption class="sr-only">API keys of the team</caption>
    <thead><tr><th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">Role</th><th scope="col">Principal</th><th scope="col">Last used</th><th scope="col">Expires</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
    <tbody>${data.keys.map(
      (k) => html`<tr><th scope="row">${k.name}</th><td><code>${k.prefix}</code></td>
        <td>${k.instance_admin ? 'instance admin' : k.role}</td><td>${k.principal.display_name}</td>
        <td>${timeAgo(k.last_used_at)}</td><td>${k.expires_at ? timeAgo(k.expires_at) : html`<span class="muted">never</span>`}</td>
        <td>${k.revoked_at ? badge('revoked', 'idle') : html`<a class="button small danger" href="/console/api-keys/${encodeURIComponent(k.id)}/revoke">Revoke…</a>`}</td></tr>`,
    )}</tbody></table></div>
  <section aria-labelledby="create"><h2 id="create">Create a key</h2>
  <form method="post" action="/console/api-keys" class="stack narrow">${csrfField(viewer)}
    <label for="key-name">Name</label><input id="key-name" name="name" required maxlength="100">
    <label for="key-role">Role</label><select id="key-role" name="role"><option value="member">member</option><option value="admin">admin</option></select>
    <label for="key-expires">Expires <span class="muted">(optional, UTC)</span></label><input id="key-expires" name="expires_at" type="date">
    <button type="submit">Create key</button>
  </form></section>`;
  return page({ title: 'API keys', viewer, section: 'api-keys', body });
}
