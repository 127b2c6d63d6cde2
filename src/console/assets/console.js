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
    if (Number.isNaN(at)) continue;
    el.textContent = relative(Date.now() - at);
    // the transcript's times carry no title of their own (thousands of them): the exact time on hover
    if (!el.title) el.title = new Date(at).toISOString();
  }
}

// A collapsed block whose body the server did not send (a long tool output, input or log): the link to the
// event's page, replaced by the body itself when the block is opened. Without this script the link is followed.
async function loadMore(details) {
  const link = details.querySelector(':scope > a.more');
  if (!details.open || !link || details.getAttribute('aria-busy') === 'true') return;
  details.setAttribute('aria-busy', 'true');
  try {
    const res = await fetch(`${link.getAttribute('href')}/body`, {
      credentials: 'same-origin',
      headers: { accept: 'text/html' },
    });
    // rendered and escaped by the server (src/console/transcript.ts), as the page itself
    if (res.ok && !res.redirected) link.outerHTML = await res.text();
  } catch {
    // the link stays: following it opens the event's page
  } finally {
    details.removeAttribute('aria-busy');
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

// A part of the page the server renders again on its own address (the overview's runs by state).
function liveHtml(el) {
  const url = el.getAttribute('data-live-html');
  let stopped = false;
  async function poll() {
    if (stopped) return;
    try {
      const res = await fetch(url, { credentials: 'same-origin', headers: { accept: 'text/html' } });
      if (res.ok && !res.redirected) {
        const text = await res.text();
        if (text !== el.dataset.last) {
          el.dataset.last = text;
          // escaped by the server's renderer, as the page itself
          el.innerHTML = text;
          refreshTimes(el);
        }
      } else stopped = true;
    } catch {
      // the next poll tries again
    }
    setTimeout(poll, 5000);
  }
  setTimeout(poll, 5000);
}

const ENDED = new Set(['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED']);

function setText(id, text) {
  const el = document.getElementById(id);
  if (el && typeof text === 'string') el.textContent = text;
}

// A run's transcript, live. Every piece of HTML in these messages was rendered and escaped by the server
// with the same functions as the page itself (src/console/transcript.ts).
function liveEvents(list) {
  if (list.getAttribute('data-ended') === 'true') return;
  const source = new EventSource(list.getAttribute('data-live-events'));
  const status = document.getElementById('live-status');
  const artifacts = document.getElementById('artifact-list');
  source.addEventListener('item', (message) => {
    let item;
    try {
      item = JSON.parse(message.data);
    } catch {
      return;
    }
    if (document.getElementById(`ev-${item.seq}`)) return;
    const call = item.tool ? list.querySelector(`li[data-tool="${CSS.escape(item.tool)}"] .tool-slot`) : null;
    if (call && item.result) call.innerHTML = item.result;
    else list.insertAdjacentHTML('beforeend', item.html);
    if (item.artifacts && artifacts) artifacts.innerHTML = item.artifacts;
    const facts = item.facts;
    if (facts) {
      if (facts.state_html) {
        const state = document.getElementById('run-state');
        if (state) state.innerHTML = facts.state_html;
      }
      setText('run-status', facts.status);
      setText('run-duration', facts.duration);
      setText('run-usage', facts.usage);
      if (ENDED.has(facts.state)) for (const el of document.querySelectorAll('[data-while-active]')) el.remove();
    }
    refreshTimes(list);
  });
  source.addEventListener('end', (message) => {
    source.close();
    list.setAttribute('data-ended', 'true');
    let state;
    try {
      state = JSON.parse(message.data).state;
    } catch {
      // no state
    }
    if (ENDED.has(state)) for (const el of document.querySelectorAll('[data-while-active]')) el.remove();
    if (status) status.textContent = `The run ended${state ? ` (${state})` : ''}.`;
  });
}

// `toggle` does not bubble: listened to in the capture phase, it covers blocks the live transcript adds later.
document.addEventListener(
  'toggle',
  (event) => {
    if (event.target instanceof HTMLDetailsElement) loadMore(event.target);
  },
  true,
);

document.addEventListener('DOMContentLoaded', () => {
  refreshTimes(document);
  setInterval(() => refreshTimes(document), 30000);
  for (const table of document.querySelectorAll('[data-live-deliveries]')) liveDeliveries(table);
  for (const list of document.querySelectorAll('[data-live-events]')) liveEvents(list);
  for (const el of document.querySelectorAll('[data-live-html]')) liveHtml(el);
  for (const form of document.querySelectorAll('form[data-confirm]')) {
    form.addEventListener('submit', (event) => {
      if (!window.confirm(form.getAttribute('data-confirm'))) event.preventDefault();
    });
  }
});
