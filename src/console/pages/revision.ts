/** A revision of a factory against the applied one: its files added, changed and removed, and its plan. */
import type { Change, Diagnostic, Factory } from '../api-types.ts';
import { badge, shortRevision } from '../format.ts';
import { html } from '../html.ts';
import { page } from '../layout.ts';
import type { Viewer } from '../layout.ts';
import { fileHref } from './factory.ts';

export interface RevisionFileDiff {
  path: string;
  status: 'added' | 'changed' | 'removed';
  /** Unified hunks; undefined when the file is too large to diff line by line. */
  diff: string | undefined;
}

export interface RevisionPageData {
  factory: Factory;
  revision: string;
  files: RevisionFileDiff[];
  /** What applying it would do (POST /factories/{id}/plan), or why it cannot be applied. */
  plan: { valid: boolean; changes: Change[]; diagnostics: Diagnostic[] };
}

export function revisionPage(viewer: Viewer, data: RevisionPageData): string {
  const { factory, revision, plan } = data;
  const errors = plan.diagnostics.filter((d) => d.severity === 'error');
  const by = (action: string) => plan.changes.filter((c) => c.action === action);
  const body = html`<p class="crumbs"><a href="/">Factories</a> / <a href="/console/factories/${factory.id}">${factory.name}</a> /</p>
  <h1>Revision <code>${shortRevision(revision)}</code></h1>
  <p>Compared with the applied revision <code>${shortRevision(factory.status.applied_revision)}</code>.</p>
  <section aria-labelledby="plan"><h2 id="plan">Plan</h2>
  ${
    !plan.valid
      ? html`<p>${badge('refused', 'bad')} It cannot be applied: ${errors.length} error${errors.length === 1 ? '' : 's'}.</p>
        <ul class="diagnostics">${errors.map((d) => html`<li class="error"><a href="${fileHref(factory.id, d.file, d.line)}"><code>${d.file}:${d.line}:${d.column}</code></a> <code>${d.code}</code> ${d.message}</li>`)}</ul>`
      : plan.changes.length === 0
        ? html`<p class="muted">No resource would change.</p>`
        : html`<ul class="plain">${(['created', 'updated', 'deleted'] as const).map((action) =>
            by(action).length
              ? html`<li>${action === 'updated' ? 'changed' : action}: ${by(action).map((c, i) => html`${i ? ', ' : ''}${c.kind} <code>${c.name}</code>`)}</li>`
              : '',
          )}</ul>`
  }
  </section>
  <section aria-labelledby="files"><h2 id="files">Files</h2>
  ${
    data.files.length === 0
      ? html`<p class="muted">The same files as the applied revision.</p>`
      : data.files.map(
          (
            f,
          ) => html`<h3><code>${f.path}</code> ${badge(f.status, f.status === 'removed' ? 'bad' : f.status === 'added' ? 'ok' : 'warn')}</h3>
          ${f.diff === undefined ? html`<p class="muted">Too large to compare line by line.</p>` : html`<pre class="payload diff">${f.diff}</pre>`}`,
        )
  }
  </section>`;
  return page({ title: `Revision ${shortRevision(revision)}`, viewer, section: 'overview', body });
}
