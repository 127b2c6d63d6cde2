import type { Schedule } from '../api-types.ts';
import { badge, timeAgo } from '../format.ts';
import { html } from '../html.ts';
import type { SafeHtml } from '../html.ts';
import { csrfField, errorBox, page } from '../layout.ts';
import type { Viewer } from '../layout.ts';

const enc = encodeURIComponent;

/** The fields of a schedule made through the API; a factory's schedules are changed in its files. */
function scheduleFields(viewer: Viewer, prefix: string, s?: Schedule): SafeHtml {
  return html`${csrfField(viewer)}
    <label for="${prefix}-name">Name</label><input id="${prefix}-name" name="name" required maxlength="200" value="${s?.name ?? ''}">
    <label for="${prefix}-cron">Cron expression <span class="muted">(five fields, UTC: <code>0 9 * * 1-5</code>)</span></label><input id="${prefix}-cron" name="cron_schedule" required maxlength="100" value="${s?.cron_schedule ?? ''}">
    <label for="${prefix}-prompt">Prompt</label><textarea id="${prefix}-prompt" name="prompt" rows="3" required>${s?.prompt ?? ''}</textarea>
    <label><input type="checkbox" name="enabled" value="true" ${!s || s.enabled ? html`checked` : ''}> Enabled</label>`;
}

function row(viewer: Viewer, s: Schedule): SafeHtml {
  const editable = !s.factory_uid;
  return html`<tr id="schedule-${s.id}"><th scope="row">${s.name}</th><td><code>${s.cron_schedule}</code></td>
    <td>${s.enabled ? badge('active', 'ok') : badge('paused', 'idle')}${s.last_spawn_error ? html` ${badge('error', 'bad')} ${s.last_spawn_error}` : ''}</td>
    <td>${timeAgo(s.history.next_run)}</td><td>${timeAgo(s.history.last_ran)}</td>
    <td>${s.factory_uid ? html`<a href="/console/factories/${enc(s.factory_uid)}">automation ${s.automation_name ?? ''}</a>` : 'API'}</td>
    <td>${
      editable
        ? html`<details><summary>Edit</summary><form method="post" action="/console/schedules/${enc(s.id)}" class="stack">${scheduleFields(viewer, `ed-${s.id}`, s)}<button type="submit">Save schedule</button></form></details>
      <a class="button small danger" href="/console/schedules/${enc(s.id)}/delete">Delete…</a>`
        : html`<span class="muted">change it in the factory's files</span>`
    }</td></tr>`;
}

export function schedulesPage(
  viewer: Viewer,
  data: { schedules: Schedule[]; notice?: string; error?: string },
): string {
  const body = html`<h1>Schedules</h1>
  ${data.notice ? html`<p class="notice" role="status">${data.notice}</p>` : ''}
  ${data.error ? errorBox(data.error) : ''}
  ${
    data.schedules.length === 0
      ? html`<p class="muted">No schedules.</p>`
      : html`<div class="scroll"><table>
    <caption class="sr-only">Schedules of the team</caption>
    <thead><tr><th scope="col">Name</th><th scope="col">Cron</th><th scope="col">State</th><th scope="col">Next</th><th scope="col">Last</th><th scope="col">From</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
    <tbody>${data.schedules.map((s) => row(viewer, s))}</tbody></table></div>`
  }
  <section aria-labelledby="new-schedule"><h2 id="new-schedule">New schedule</h2>
  <form method="post" action="/console/schedules" class="stack narrow">${scheduleFields(viewer, 'new')}<button type="submit">Create schedule</button></form>
  </section>`;
  return page({ title: 'Schedules', viewer, section: 'schedules', body });
}
