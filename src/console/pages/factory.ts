import type { Apply, Automation, CreatedWebhook, DefinitionFile, Diagnostic, Factory, Webhook } from '../api-types.ts';
import { badge, factoryState, shortRevision, timeAgo } from '../format.ts';
import { html } from '../html.ts';
import type { SafeHtml } from '../html.ts';
import { csrfField, errorBox, page } from '../layout.ts';
import type { Viewer } from '../layout.ts';
import { agentLinks } from './scores.ts';

export interface FactoryPageData {
  factory: Factory;
  applies: Apply[];
  files: DefinitionFile[];
  webhooks: Webhook[];
  automations: Automation[];
  /** A webhook just created or whose secret was just rotated: its secret is shown this once. */
  created?: CreatedWebhook;
  rotated?: boolean;
  notice?: string;
  error?: string;
}

export const fileHref = (factoryId: string, file: string, line?: number): string =>
  `/console/factories/${encodeURIComponent(factoryId)}/files/${file.split('/').map(encodeURIComponent).join('/')}${line ? `#L${line}` : ''}`;

function diagnosticList(factoryId: string, diagnostics: Diagnostic[], hasFile: (f: string) => boolean): SafeHtml {
  return html`<ul class="diagnostics">${diagnostics.map((d) => {
    const where = `${d.file}:${d.line}:${d.column}`;
    return html`<li class="${d.severity}">${badge(d.severity, d.severity === 'error' ? 'bad' : 'warn')}
      ${hasFile(d.file) || d.severity === 'error' ? html`<a href="${fileHref(factoryId, d.file, d.line)}"><code>${where}</code></a>` : html`<code>${where}</code>`}
      <code>${d.code}</code> ${d.message}</li>`;
  })}</ul>`;
}

function changeSummary(apply: Apply): SafeHtml {
  if (apply.changes.length === 0) return html`<span class="muted">no changes</span>`;
  const by = (action: string) => apply.changes.filter((c) => c.action === action);
  return html`<ul class="plain">${(['created', 'updated', 'deleted'] as const).map((action) =>
    by(action).length
      ? html`<li>${action}: ${by(action).map((c, i) => html`${i ? ', ' : ''}${c.kind} <code>${c.name}</code>`)}</li>`
      : '',
  )}</ul>`;
}

function managedForms(viewer: Viewer, data: FactoryPageData): SafeHtml {
  const f = data.factory;
  if (f.read_only || viewer.role !== 'admin') return html``;
  return html`<section aria-labelledby="manage">
    <h2 id="manage">Change this factory</h2>
    <p class="muted">Each change is a commit to the factory's managed repository, applied at once.</p>
    <div class="cards">
      <form method="post" action="/console/factories/${f.id}/webhooks" class="card stack">
        <h3>New webhook</h3>
        ${csrfField(viewer)}
        <label for="wh-name">Name</label><input id="wh-name" name="name" required pattern="[a-z0-9][a-z0-9\\-]*" title="lower-case letters, digits and hyphens, starting with a letter or digit" maxlength="64">
        <label for="wh-mode">Authentication</label>
        <select id="wh-mode" name="auth_mode"><option value="token">token</option><option value="url_token">url_token</option><option value="signature">signature</option></select>
        <label for="wh-scheme">Signature scheme (signature only)</label><input id="wh-scheme" name="signature_scheme" placeholder="standard-webhooks">
        <button type="submit">Create webhook</button>
      </form>
      ${
        data.webhooks.length === 0
          ? html`<div class="card stack"><h3>New automation</h3><p class="muted">An automation here starts runs on a webhook's deliveries: create a webhook first.</p></div>`
          : html`<form method="post" action="/console/factories/${f.id}/automations" class="card stack">
        <h3>New automation</h3>
        ${csrfField(viewer)}
        <label for="au-name">Name</label><input id="au-name" name="name" required maxlength="64" pattern="[a-z0-9][a-z0-9\\-]*" title="lower-case letters, digits and hyphens, starting with a letter or digit">
        <label for="au-webhook">Webhook</label>
        <select id="au-webhook" name="webhook" required>${data.webhooks.map((w) => html`<option value="${w.uid}">${w.name}</option>`)}</select>
        <label for="au-filter">Payload filter (JSON, optional)</label><textarea id="au-filter" name="filter" rows="3" placeholder='{"status": ["failed"]}'></textarea>
        <label for="au-prompt">Prompt</label><textarea id="au-prompt" name="prompt" rows="4" required></textarea>
        <button type="submit">Create automation</button>
      </form>`
      }
    </div>
  </section>`;
}

function startRun(viewer: Viewer, data: FactoryPageData): SafeHtml {
  const f = data.factory;
  return html`<section aria-labelledby="start"><h2 id="start">Start a run</h2>
    <p class="muted">Sends work to this factory: a run of its foreman with the definition's defaults.</p>
    <form method="post" action="/console/factories/${f.id}/runs" class="stack narrow">
      ${csrfField(viewer)}
      <label for="run-title">Title <span class="muted">(optional)</span></label><input id="run-title" name="title" maxlength="200">
      <label for="run-prompt">Prompt</label><textarea id="run-prompt" name="prompt" rows="4" required></textarea>
      <button type="submit">Start run</button>
    </form></section>`;
}

function automationEditor(viewer: Viewer, data: FactoryPageData, a: Automation): SafeHtml {
  if (data.factory.read_only || viewer.role !== 'admin') return html``;
  return html`<details><summary>Edit ${a.name}</summary>
    <form method="post" action="/console/automations/${a.id}" class="stack narrow">
      ${csrfField(viewer)}
      <label for="ed-prompt-${a.id}">Prompt</label>
      <textarea id="ed-prompt-${a.id}" name="prompt" rows="5" required>${a.prompt}</textarea>
      <label><input type="checkbox" name="enabled" value="true" ${a.enabled ? html`checked` : ''}> Enabled</label>
      <button type="submit">Save automation</button>
    </form>
    <form method="post" action="/console/automations/${a.id}/delete" class="inline" data-confirm="Delete automation ${a.name}?">${csrfField(viewer)}<button type="submit" class="small danger">Delete automation</button></form>
  </details>`;
}

function webhookRows(viewer: Viewer, data: FactoryPageData): SafeHtml {
  const canManage = !data.factory.read_only && viewer.role === 'admin';
  return html`${data.webhooks.map(
    (w) => html`<tr>
      <th scope="row"><a href="/console/webhooks/${w.uid}">${w.name}</a></th>
      <td>${w.auth_mode}${w.signature_scheme ? html` (${w.signature_scheme})` : ''}</td>
      <td>${w.enabled ? badge('enabled', 'ok') : badge('disabled', 'idle')}</td>
      <td>${
        canManage
          ? html`${w.enabled ? html`<a class="button small" href="/console/webhooks/${w.uid}/toggle">Disable…</a>` : html`<form method="post" action="/console/webhooks/${w.uid}/toggle" class="inline">${csrfField(viewer)}<button type="submit" class="small">Enable</button></form>`}
        <a class="button small" href="/console/webhooks/${w.uid}/rotate">Rotate secret…</a>
        <form method="post" action="/console/webhooks/${w.uid}/delete" class="inline" data-confirm="Delete webhook ${w.name}? Senders get 404 at once.">${csrfField(viewer)}<button type="submit" class="small danger">Delete</button></form>`
          : ''
      }</td>
    </tr>`,
  )}`;
}

export function factoryPage(viewer: Viewer, data: FactoryPageData): string {
  const f = data.factory;
  const state = factoryState(f.status);
  const files = new Set(data.files.map((file) => file.path));
  const source =
    f.source.type === 'git'
      ? html`git <code>${f.source.url ?? ''}</code> branch <code>${f.source.branch ?? 'main'}</code>${f.source.path ? html` path <code>${f.source.path}</code>` : ''}`
      : html`${f.source.type}`;
  const body = html`<p class="crumbs"><a href="/">Factories</a> /</p>
  <h1>${f.name} ${badge(state.label, state.tone)}</h1>
  ${data.notice ? html`<p class="notice" role="status">${data.notice}</p>` : ''}
  ${data.error ? errorBox(data.error) : ''}
  ${
    data.created?.secret
      ? html`<div class="notice" role="status"><p>${data.rotated ? html`The secret of webhook <strong>${data.created.name}</strong> was rotated: the old one is refused from now on. The new secret is shown this once:` : html`Webhook <strong>${data.created.name}</strong> created. Its secret is shown this once:`}</p>
        <p><code class="secret">${data.created.secret}</code></p><p>URL: <code>${data.created.ingress_url}</code></p></div>`
      : ''
  }
  <dl class="facts">
    <dt>Source</dt><dd>${source}</dd>
    <dt>Applied revision</dt><dd><code>${shortRevision(f.status.applied_revision)}</code> ${timeAgo(f.status.applied_at)}</dd>
    <dt>Attempted revision</dt><dd><code>${shortRevision(f.status.attempted_revision)}</code> ${timeAgo(f.status.attempted_at)}${f.status.attempted_revision && f.status.attempted_revision !== f.status.applied_revision && f.status.errors.length ? html` · <a href="/console/factories/${f.id}/revisions/${encodeURIComponent(f.status.attempted_revision)}">its diff against the applied one</a>` : ''}</dd>
    <dt>Status</dt><dd>${f.status.message ?? '—'}</dd>
  </dl>
  <form method="post" action="/console/factories/${f.id}/sync">${csrfField(viewer)}<button type="submit">Sync now</button></form>
  ${
    f.status.errors.length
      ? html`<section aria-labelledby="problems"><h2 id="problems">Problems in the last attempted revision</h2>${diagnosticList(f.id, f.status.errors, (p) => files.has(p))}</section>`
      : ''
  }
  ${f.status.applied_revision ? startRun(viewer, data) : ''}
  <section aria-labelledby="webhooks"><h2 id="webhooks">Webhooks</h2>
  ${data.webhooks.length ? html`<div class="scroll"><table><thead><tr><th scope="col">Name</th><th scope="col">Authentication</th><th scope="col">State</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead><tbody>${webhookRows(viewer, data)}</tbody></table></div>` : html`<p class="muted">None.</p>`}
  </section>
  <section aria-labelledby="automations"><h2 id="automations">Automations</h2>
  ${
    data.automations.length
      ? html`<ul class="plain">${data.automations.map((a) => html`<li id="automation-${a.id}"><code>${a.name}</code> ${a.firing ? badge('firing', 'ok') : badge('not firing', 'warn')} ${a.not_firing_reasons?.join('; ') ?? ''}${automationEditor(viewer, data, a)}</li>`)}</ul>`
      : html`<p class="muted">None.</p>`
  }
  </section>
  ${agentLinks(f.id, data.files)}
  ${managedForms(viewer, data)}
  <section aria-labelledby="history"><h2 id="history">Apply history</h2>
  ${
    data.applies.length
      ? html`<ol class="history">${data.applies.map(
          (a) => html`<li>${badge(a.result, a.result === 'failed' ? 'bad' : a.result === 'applied' ? 'ok' : 'idle')}
          <code>${shortRevision(a.revision)}</code> ${timeAgo(a.finished_at)}${a.commit.message ? html` · ${a.commit.message.split('\n')[0]}` : ''}
          ${a.result === 'failed' && a.errors.length ? diagnosticList(f.id, a.errors.slice(0, 5), (p) => files.has(p)) : changeSummary(a)}</li>`,
        )}</ol>`
      : html`<p class="muted">No applies yet.</p>`
  }
  </section>
  <section aria-labelledby="files"><h2 id="files">Files of the applied revision</h2>
  ${data.files.length ? html`<ul class="files">${data.files.map((file) => html`<li><a href="${fileHref(f.id, file.path)}"><code>${file.path}</code></a></li>`)}</ul>` : html`<p class="muted">Nothing applied yet.</p>`}
  </section>`;
  return page({ title: f.name, viewer, section: 'overview', body });
}

/** One file with numbered lines; `#L12` marks line 12 (`:target`), as the problems above link to it. */
export function filePage(
  viewer: Viewer,
  factory: Factory,
  path: string,
  content: string | undefined,
  diagnostics: Diagnostic[],
  /** The content is the refused revision's own (kept by the API), where the problems' lines are. */
  fromRefused = false,
): string {
  const flagged = new Map<number, Diagnostic[]>();
  for (const d of diagnostics) if (d.file === path) flagged.set(d.line, [...(flagged.get(d.line) ?? []), d]);
  const lines = content?.split('\n') ?? [];
  const body = html`<p class="crumbs"><a href="/">Factories</a> / <a href="/console/factories/${factory.id}">${factory.name}</a> /</p>
  <h1><code>${path}</code></h1>
  ${
    fromRefused
      ? html`<p class="notice">Shown as in the refused revision <code>${shortRevision(factory.status.attempted_revision)}</code>, where the marked problems are; the factory still serves <code>${shortRevision(factory.status.applied_revision)}</code>.</p>`
      : ''
  }
  ${
    !fromRefused &&
    content !== undefined &&
    factory.status.attempted_revision &&
    factory.status.attempted_revision !== factory.status.applied_revision
      ? html`<p class="notice">Shown as applied at <code>${shortRevision(factory.status.applied_revision)}</code>; the marked problems are in the attempted revision <code>${shortRevision(factory.status.attempted_revision)}</code>.</p>`
      : ''
  }
  ${
    content === undefined
      ? html`<p>This file is not part of the applied revision${diagnostics.some((d) => d.file === path) ? ' (it is in the refused revision, whose problems are listed below)' : ''}.</p>
        ${diagnostics.filter((d) => d.file === path).length ? html`<ul class="diagnostics">${diagnostics.filter((d) => d.file === path).map((d) => html`<li id="L${d.line}" class="${d.severity}"><code>${d.file}:${d.line}:${d.column}</code> <code>${d.code}</code> ${d.message}</li>`)}</ul>` : ''}`
      : html`<ol class="source">${lines.map((text, i) => {
          const n = i + 1;
          const marks = flagged.get(n);
          return html`<li id="L${n}"${marks ? html` class="flagged"` : ''}><a class="ln" href="#L${n}" aria-label="line ${n}">${n}</a><code>${text}</code>${marks ? html`<span class="mark">${marks.map((d) => html`<code>${d.code}</code> ${d.message}`)}</span>` : ''}</li>`;
        })}</ol>`
  }`;
  return page({ title: path, viewer, section: 'overview', body });
}
