// Agentyard console: progressive enhancement only; every page works without this file.
'use strict';

function relative(ms) {
  const s = Math.round(ms / 1000);
  const a = Math.abs(s);
  if (a < 5) return 'just now';
  const [n, unit] =
    a < 45 ? [a, 'second'] : a < 2700 ? [Math.round(a / 60), 'minute'] : a < 79200 ? [Math.round(a / 3600), 'hour'] : [Math.round(a / 86400), 'day'];
  const text = `${n} ${unit}${n === 1 ? '' : 's'}`;
  return s < 0 ? `in ${text}` : `${text} ago`;
}

function refreshTimes(root) {
  for (const el of root.querySelectorAll('time[datetime]')) {
    const at = Date.parse(el.getAttribute('datetime'));
    if (!Number.isNaN(at)) el.textContent = relative(Date.now() - at);
  }
}

function liveDeliveries(table) {
  const url = table.getAttribute('data-live-deliveries');
  const body = table.querySelector('tbody');
  const status = document.getElementById('live-status');
  let stopped = false;
  async function poll() {
    if (stopped) return;
    try {
      const res = await fetch(url, { credentials: 'same-origin', headers: { accept: 'text/html' } });
      if (res.ok) {
        const rows = await res.text();
        if (rows !== body.dataset.last) {
          body.dataset.last = rows;
          // The server escaped every value in these rows (the same renderer as the page).
          body.innerHTML = rows;
          refreshTimes(body);
        }
      } else if (res.status === 401 || res.redirected) {
        stopped = true;
        if (status) status.textContent = 'Signed out: reload to see new deliveries.';
      }
    } catch {
      // the next poll tries again
    }
    setTimeout(poll, 2000);
  }
  setTimeout(poll, 2000);
}

function describe(data) {
  if (!data || typeof data !== 'object') return String(data);
  if (data.state) return data.status_message?.message ? `${data.state}: ${data.status_message.message}` : data.state;
  if (typeof data.text === 'string') return data.text;
  if (typeof data.message === 'string') return data.message;
  if (data.tool || data.name) return `${data.tool ?? data.name} ${JSON.stringify(data.input ?? data.arguments ?? '')}`;
  return JSON.stringify(data);
}

const TONES = {
  SUCCEEDED: 'ok', FAILED: 'bad', ERROR: 'bad', CANCELLED: 'idle', INPROGRESS: 'busy', CLAIMED: 'busy',
  QUEUED: 'idle', PENDING: 'idle', BLOCKED: 'warn',
};
const ENDED = new Set(['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED']);

function liveEvents(list) {
  const source = new EventSource(list.getAttribute('data-live-events'));
  const stateEl = document.getElementById('run-state');
  const add = (kind, text) => {
    const li = document.createElement('li');
    const k = document.createElement('span');
    k.className = 'kind';
    k.textContent = kind;
    li.append(k, document.createTextNode(text));
    list.append(li);
  };
  source.onmessage = (message) => {
    let data;
    try {
      data = JSON.parse(message.data);
    } catch {
      add('message', message.data);
      return;
    }
    const kind = data.type ?? data.kind ?? data.event_type ?? (data.state ? 'status' : 'event');
    add(String(kind), describe(data.data ?? data.payload ?? data));
    const state = data.state ?? data.data?.state;
    if (state && stateEl) {
      stateEl.textContent = '';
      const badge = document.createElement('span');
      badge.className = `badge ${TONES[state] ?? 'idle'}`;
      badge.textContent = state;
      stateEl.append(badge);
      if (ENDED.has(state)) for (const form of document.querySelectorAll('form[data-while-active]')) form.remove();
    }
  };
  const names = ['state', 'status', 'message', 'tool_call', 'tool_result', 'usage', 'result', 'session', 'skill', 'followup', 'log', 'error', 'artifact', 'report', 'question', 'reply'];
  for (const name of names) {
    source.addEventListener(name, (message) => {
      // EventSource's own connection errors arrive as 'error' events without data
      if (typeof message.data === 'string') source.onmessage(message);
    });
  }
  source.addEventListener('end', (message) => {
    source.onmessage(message);
    source.close();
    list.setAttribute('data-ended', 'true');
  });
}

document.addEventListener('DOMContentLoaded', () => {
  refreshTimes(document);
  setInterval(() => refreshTimes(document), 30000);
  for (const table of document.querySelectorAll('[data-live-deliveries]')) liveDeliveries(table);
  for (const list of document.querySelectorAll('[data-live-events]')) liveEvents(list);
  for (const form of document.querySelectorAll('form[data-confirm]')) {
    form.addEventListener('submit', (event) => {
      if (!window.confirm(form.getAttribute('data-confirm'))) event.preventDefault();
    });
  }
});
