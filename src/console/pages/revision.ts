/** A revision of a factory against the applied one: its files added, changed and removed, and its plan. */
import type { Change, Diagnostic, Factory } from '../api-types.ts';
import { badge, shortRevision } from '../format.ts';
import { html } from '../html.ts';
import { page } from '../layout.ts';
import type { Viewer } from '../layout.ts';
import { fileHref } from './factory.ts';
import { changesFromFiles } from '../revision-changes.ts';
import type { SafeHtml } from '../html.ts';

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

const fileAnchor = (path: string) => `file-${path.replace(/[^A-Za-z0-9_-]/g, '-')}`;

/** Created, changed and deleted, one line each (the plan's words: `updated` reads "changed"). */
function changeList(changes: readonly Change[], link: (c: Change) => SafeHtml | string): SafeHtml {
  return html`<ul class="plain">${(['created', 'updated', 'deleted'] as const).map((action) => {
    const some = changes.filter((c) => c.action === action);
    return some.length
      ? html`<li><strong>${action === 'updated' ? 'changed' : action}</strong>: ${some.map((c, i) => html`${i ? ', ' : ''}${link(c)}`)}</li>`
      : '';
  })}</ul>`;
}

/** The files, by what happened to them, each linking to its diff below. */
function fileList(files: readonly RevisionFileDiff[]): SafeHtml {
  const named = (status: RevisionFileDiff['status'], word: string) => {
    const some = files.filter((f) => f.status === status);
    return some.length
      ? html`<li><strong>${word}</strong> (${some.length}): ${some.map((f, i) => html`${i ? ', ' : ''}<a href="#${fileAnchor(f.path)}"><code>${f.path}</code></a>`)}</li>`
      : '';
  };
  return html`<ul class="plain" id="file-changes">${named('added', 'created')}${named('changed', 'changed')}${named('removed', 'deleted')}</ul>`;
}

export function revisionPage(viewer: Viewer, data: RevisionPageData): string {
  const { factory, revision, plan } = data;
  const errors = plan.diagnostics.filter((d) => d.severity === 'error');
  // A refused revision has no plan: the resources its files define say what it would create, change and delete.
  const fromFiles = plan.valid ? [] : changesFromFiles(data.files);
  const body = html`<p class="crumbs"><a href="/">Factories</a> / <a href="/console/factories/${factory.id}">${factory.name}</a> /</p>
  <h1>Revision <code>${shortRevision(revision)}</code></h1>
  <p>Compared with the applied revision <code>${shortRevision(factory.status.applied_revision)}</code>.</p>
  <section aria-labelledby="changes"><h2 id="changes">Changes</h2>
  ${data.files.length === 0 ? html`<p class="muted">The same files as the applied revision.</p>` : fileList(data.files)}
  </section>
  <section aria-labelledby="plan"><h2 id="plan">Plan</h2>
  ${
    !plan.valid
      ? html`<div class="cards"><div class="card"><p>${badge('refused', 'bad')} It cannot be applied: ${errors.length} error${errors.length === 1 ? '' : 's'}.</p>
        <ul class="diagnostics">${errors.map((d) => html`<li class="error"><a href="${fileHref(factory.id, d.file, d.line)}"><code>${d.file}:${d.line}:${d.column}</code></a> <code>${d.code}</code> ${d.message}</li>`)}</ul></div>
        <div class="card" id="refused-plan"><p><strong>What it would change</strong>, read from its files (the full plan needs a revision that validates):</p>
        ${fromFiles.length === 0 ? html`<p class="muted">No resource file changed.</p>` : changeList(fromFiles, (c) => html`${c.kind} <a href="#${fileAnchor(c.file)}"><code>${c.name}</code></a>`)}</div></div>`
      : plan.changes.length === 0
        ? html`<p class="muted">No resource would change.</p>`
        : changeList(plan.changes, (c) => html`${c.kind} <code>${c.name}</code>`)
  }
  </section>
  <section aria-labelledby="files"><h2 id="files">Files</h2>
  ${
    data.files.length === 0
      ? html`<p class="muted">The same files as the applied revision.</p>`
      : data.files.map(
          (
            f,
          ) => html`<h3 id="${fileAnchor(f.path)}"><code>${f.path}</code> ${badge(f.status, f.status === 'removed' ? 'bad' : f.status === 'added' ? 'ok' : 'warn')}</h3>
          ${f.diff === undefined ? html`<p class="muted">Too large to compare line by line.</p>` : html`<pre class="payload diff">${f.diff}</pre>`}`,
        )
  }
  </section>`;
  return page({ title: `Revision ${shortRevision(revision)}`, viewer, section: 'overview', body });
}
