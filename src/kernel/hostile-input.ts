/**
 * Checks of request input that no schema expresses: JSON nesting depth (before parsing) and strings that
 * PostgreSQL cannot store (NUL) or that are not Unicode (lone surrogates). Framework-free and iterative, so
 * that hostile input can neither blow the stack nor reach the database.
 */

import { AppError } from './errors.ts';

/** Deepest nesting of arrays and objects a JSON body may have (docs/security.md, "HTTP input"). */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether the JSON text nests arrays/objects deeper than `max`. A linear scan that skips strings; it does
 * not validate the text (JSON.parse does that afterwards).
 */
export function jsonDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** What is wrong with a string, or undefined when it may be stored and shown. */
export function stringFault(value: string): string | undefined {
  if (value.includes('\0')) return 'contains a NUL character';
  if (LONE_SURROGATE.test(value)) return 'contains a lone UTF-16 surrogate (not Unicode text)';
  return undefined;
}

/** A name of a member for a message: `config.name`, `files[2]`, `metadata["a b"]`. */
function memberPath(parent: string, key: string | number): string {
  if (typeof key === 'number') return `${parent}[${key}]`;
  const safe = /^[A-Za-z_][A-Za-z0-9_-]*$/.test(key) ? key : JSON.stringify(key.replaceAll('\0', '\\0'));
  if (safe.startsWith('"')) return `${parent}[${safe}]`;
  return parent ? `${parent}.${safe}` : safe;
}

/**
 * The first string (a value or an object key) in `value` that `stringFault` refuses, with its path under
 * `root`; undefined when there is none. Walks with an explicit stack: depth costs no recursion.
 */
export function findStringFault(value: unknown, root: string): { path: string; fault: string } | undefined {
  const stack: { value: unknown; path: string }[] = [{ value, path: root }];
  while (stack.length > 0) {
    const item = stack.pop()!;
    const v = item.value;
    if (typeof v === 'string') {
      const fault = stringFault(v);
      if (fault) return { path: item.path, fault };
    } else if (ArrayBuffer.isView(v) || v instanceof ArrayBuffer) {
      // raw bytes (a push hook's body): not text
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], path: memberPath(item.path, i) });
    } else if (v !== null && typeof v === 'object') {
      const entries = Object.entries(v as Record<string, unknown>);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, member] = entries[i]!;
        const fault = stringFault(key);
        if (fault) return { path: item.path, fault: `has a key that ${fault}` };
        stack.push({ value: member, path: memberPath(item.path, key) });
      }
    }
  }
  return undefined;
}

/**
 * RFC 3339 with `Z` or an offset; a naive time (Python's isoformat without zone) is taken as UTC. Years outside
 * 0001-9999 are refused (PostgreSQL and RFC 3339 have no year 0; later years are no one's filter).
 */
export function parseTimestamp(name: string, value: string | undefined): Date | undefined {
  if (value === undefined || value === '') return undefined;
  const naive = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?$/.test(value);
  const date = new Date(naive ? `${value.length === 10 ? `${value}T00:00:00` : value}Z` : value);
  const shown = JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value);
  if (Number.isNaN(date.getTime()))
    throw new AppError('invalid_timestamp', `${name} must be an RFC 3339 timestamp, got ${shown}`);
  const year = date.getUTCFullYear();
  if (year < 1 || year > 9999)
    throw new AppError('invalid_timestamp', `${name} must lie in the years 0001-9999, got ${shown}`);
  return date;
}
