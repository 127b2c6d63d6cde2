import { html } from './html.ts';
import type { SafeHtml } from './html.ts';

/** A time as `<time>`: relative text, the exact UTC time on hover; console.js keeps the relative text fresh. */
export function timeAgo(iso: string | null | undefined, now = Date.now()): SafeHtml {
  if (!iso) return html`<span class="muted">never</span>`;
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return html`${iso}`;
  return html`<time datetime="${iso}" title="${new Date(at).toISOString()}">${relative(now - at)}</time>`;
}

export function relative(ms: number): string {
  const s = Math.round(ms / 1000);
  const future = s < 0;
  const a = Math.abs(s);
  const [n, unit] =
    a < 45
      ? [a, 'second']
      : a < 2700
        ? [Math.round(a / 60), 'minute']
        : a < 79200
          ? [Math.round(a / 3600), 'hour']
          : [Math.round(a / 86400), 'day'];
  if (unit === 'second' && a < 5) return 'just now';
  const text = `${n} ${unit}${n === 1 ? '' : 's'}`;
  return future ? `in ${text}` : `${text} ago`;
}

export type Tone = 'ok' | 'bad' | 'warn' | 'idle' | 'busy';

/** A state as colour and text (never colour alone). */
export function badge(text: string, tone: Tone): SafeHtml {
  return html`<span class="badge ${tone}">${text}</span>`;
}

export interface FactoryStatusLike {
  state: string;
  ready: boolean;
  stalled: boolean;
  source_error?: { kind?: string } | null;
}

export function factoryState(status: FactoryStatusLike): {
  label: 'Ready' | 'Failed' | 'Pending' | 'Stalled';
  tone: Tone;
} {
  // Stalled: the source itself cannot be read and retrying will not help; a refused revision is Failed (its
  // errors say what to fix, and the last good revision keeps serving).
  if (status.source_error?.kind === 'terminal') return { label: 'Stalled', tone: 'bad' };
  if (status.state === 'failed' || status.source_error) return { label: 'Failed', tone: 'bad' };
  if (status.ready) return { label: 'Ready', tone: 'ok' };
  return { label: 'Pending', tone: 'idle' };
}

const RUN_TONES: Record<string, Tone> = {
  SUCCEEDED: 'ok',
  FAILED: 'bad',
  ERROR: 'bad',
  CANCELLED: 'idle',
  INPROGRESS: 'busy',
  CLAIMED: 'busy',
  QUEUED: 'idle',
  PENDING: 'idle',
  BLOCKED: 'warn',
};

export function runState(state: string): SafeHtml {
  return badge(state, RUN_TONES[state] ?? 'idle');
}

const DELIVERY_TONES: Record<string, Tone> = { accepted: 'ok', duplicate: 'idle' };

export function deliveryLabel(label: string, status: string): SafeHtml {
  return badge(label, DELIVERY_TONES[status] ?? 'bad');
}

export function bytes(n: number): string {
  return n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1024 / 1024).toFixed(1)} MB`;
}

export function shortRevision(revision: string | null | undefined): string {
  if (!revision) return '—';
  const m = /^(.*)@sha1:([0-9a-f]{7})[0-9a-f]*$/.exec(revision);
  return m ? `${m[1]}@${m[2]}` : revision;
}
