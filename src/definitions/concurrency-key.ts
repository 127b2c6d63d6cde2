/**
 * An automation's `concurrency` (docs/governance.md, "Concurrency keys"): the key template's grammar, checked
 * by `agentyard validate`, and its rendering over an event when the automation fires. Pure.
 *
 * A template is text with `{{ path }}` placeholders; a path is dot-separated names (letters, digits, `_`, `-`;
 * a number indexes an array). What a placeholder stands for is the caller's `lookup`.
 */
import { createHash } from 'node:crypto';

export type ConcurrencyOnNew = 'queue' | 'cancelRunning' | 'skip';

export interface ConcurrencyPolicy {
  /** The key template, as written. */
  key: string;
  /** Active runs a key may have at once (default 1). */
  limit: number;
  /** What a firing does when its key is at the limit (default `queue`). */
  onNew: ConcurrencyOnNew;
}

export const ON_NEW_VALUES: readonly ConcurrencyOnNew[] = ['queue', 'cancelRunning', 'skip'];

/** A rendered key longer than this keeps a prefix and a digest of the whole (distinct keys stay distinct). */
export const MAX_RENDERED_KEY = 200;
const DIGEST_CHARS = 16;

const PATH = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$/;

export type TemplatePart = { text: string } | { path: string[] };

/** The template's parts, or what is wrong with it. */
export function parseKeyTemplate(template: string): { parts: TemplatePart[] } | { error: string } {
  const parts: TemplatePart[] = [];
  let rest = template;
  while (rest.length > 0) {
    const open = rest.indexOf('{{');
    if (open < 0) {
      parts.push({ text: rest });
      break;
    }
    if (open > 0) parts.push({ text: rest.slice(0, open) });
    const close = rest.indexOf('}}', open + 2);
    if (close < 0)
      return { error: `\`{{\` at character ${template.length - rest.length + open + 1} is never closed by \`}}\`` };
    const inner = rest.slice(open + 2, close).trim();
    if (!PATH.test(inner))
      return {
        error: `\`{{${rest.slice(open + 2, close)}}}\` is not a field path (names of letters, digits, \`_\` or \`-\` joined by \`.\`, e.g. \`{{pull_request.number}}\`)`,
      };
    parts.push({ path: inner.split('.') });
    rest = rest.slice(close + 2);
  }
  return { parts };
}

/** The value at `path` in a JSON value; undefined when any step is missing. */
export function valueAt(value: unknown, path: readonly string[]): unknown {
  let here = value;
  for (const step of path) {
    if (Array.isArray(here)) {
      if (!/^\d+$/.test(step)) return undefined;
      here = here[Number(step)];
    } else if (typeof here === 'object' && here !== null && Object.hasOwn(here, step)) {
      here = (here as Record<string, unknown>)[step];
    } else return undefined;
  }
  return here;
}

/** A field as it goes into a key: strings as they are, numbers and booleans as JSON writes them, anything else (missing, null, an object or a list) as nothing. */
function scalarText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return '';
}

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/**
 * The key a firing renders: each placeholder replaced by `lookup(path)` as scalarText writes it, control
 * characters replaced by `?`, and a key longer than MAX_RENDERED_KEY characters cut to a prefix plus `~` and the
 * first characters of its SHA-256. A template that does not parse renders as itself (validation refuses it first).
 */
export function renderKey(template: string, lookup: (path: readonly string[]) => unknown): string {
  const parsed = parseKeyTemplate(template);
  const raw =
    'error' in parsed
      ? template
      : parsed.parts.map((p) => ('text' in p ? p.text : scalarText(lookup(p.path)))).join('');
  const clean = raw.replace(CONTROL, '?');
  const chars = Array.from(clean);
  if (chars.length <= MAX_RENDERED_KEY) return clean;
  const digest = createHash('sha256').update(clean).digest('hex').slice(0, DIGEST_CHARS);
  return `${chars.slice(0, MAX_RENDERED_KEY - DIGEST_CHARS - 1).join('')}~${digest}`;
}

/** The policy as the applied definition stores it, defaults filled in; undefined when there is none. */
export function concurrencyOf(raw: unknown): ConcurrencyPolicy | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const r = raw as { key?: unknown; limit?: unknown; onNew?: unknown };
  if (typeof r.key !== 'string') return undefined;
  const limit = typeof r.limit === 'number' && Number.isInteger(r.limit) && r.limit >= 1 ? r.limit : 1;
  const onNew = ON_NEW_VALUES.includes(r.onNew as ConcurrencyOnNew) ? (r.onNew as ConcurrencyOnNew) : 'queue';
  return { key: r.key, limit, onNew };
}
