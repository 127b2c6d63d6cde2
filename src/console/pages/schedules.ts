import type { Schedule } from '../api-types.ts';
import { badge, timeAgo } from '../format.ts';
import { html } from '../html.ts';
import { page } from '../layout.ts';
import type { Viewer } from '../layout.ts';

export function schedulesPage(viewer: Viewer, schedules: Schedule[]): string {
  const body = html`<h1>Schedules</h1>
  ${
    schedules.length === 0
      ? html`<p class="muted">No schedules.</p>`
      : html`<div class="scroll"><table>
    <thead><tr><th scope="col">Name</th><th scope="col">Cron</th><th scope="col">State</th><th scope="col">Next</th><th scope="col">Last</th><th scope="col">From</th></tr></thead>
    <tbody>${schedules.map(
      (s) => html`<tr><th scope="row">${s.name}</th><td><code>${s.cron_schedule}</code></td>
        <td>${s.enabled ? badge('active', 'ok') : badge('paused', 'idle')}${s.last_spawn_error ? html` ${badge('error', 'bad')} ${s.last_spawn_error}` : ''}</td>
        <td>${timeAgo(s.history.next_run)}</td><td>${timeAgo(s.history.last_ran)}</td>
        <td>${s.factory_uid ? html`<a href="/console/factories/${s.factory_uid}">automation ${s.automation_name ?? ''}</a>` : 'API'}</td></tr>`,
    )}</tbody></table></div>`
  }`;
  return page({ title: 'Schedules', viewer, section: 'schedules', body });
}
