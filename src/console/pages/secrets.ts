import { timeAgo } from '../format.ts';
import { html } from '../html.ts';
import { csrfField, errorBox, page } from '../layout.ts';
import type { Viewer } from '../layout.ts';

export interface SecretItem {
  name: string;
  created_at: string;
  updated_at: string;
}

const NAME_PATTERN = '[A-Za-z0-9][A-Za-z0-9_.\\-]*';

/** The team's secrets by name: set a value (never shown, never sent back) and delete. */
export function secretsPage(viewer: Viewer, data: { secrets: SecretItem[]; notice?: string; error?: string }): string {
  const body = html`<h1>Secrets</h1>
  <p class="muted">Values are write-only: the console sends them to the API and never shows them, not even to admins.</p>
  ${data.notice ? html`<p class="notice" role="status">${data.notice}</p>` : ''}
  ${data.error ? errorBox(data.error) : ''}
  ${
    data.secrets.length === 0
      ? html`<p class="muted">No secrets.</p>`
      : html`<div class="scroll"><table><caption class="sr-only">Secrets of the team</caption>
    <thead><tr><th scope="col">Name</th><th scope="col">Set</th><th scope="col">Changed</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
    <tbody>${data.secrets.map(
      (
        s,
      ) => html`<tr><th scope="row"><code>${s.name}</code></th><td>${timeAgo(s.created_at)}</td><td>${timeAgo(s.updated_at)}</td>
        <td><a class="button small danger" href="/console/secrets/${encodeURIComponent(s.name)}/delete">Delete…</a></td></tr>`,
    )}</tbody></table></div>`
  }
  <section aria-labelledby="set"><h2 id="set">Set a secret</h2>
  <form method="post" action="/console/secrets" class="stack narrow" autocomplete="off">${csrfField(viewer)}
    <label for="sec-name">Name</label><input id="sec-name" name="name" required maxlength="128" pattern="${NAME_PATTERN}" title="letters, digits, dot, underscore and hyphen">
    <label for="sec-value">Value <span class="muted">(replaces the current value of a secret with this name)</span></label><textarea id="sec-value" name="value" rows="3" required spellcheck="false"></textarea>
    <button type="submit">Set secret</button>
  </form></section>`;
  return page({ title: 'Secrets', viewer, section: 'secrets', body });
}
