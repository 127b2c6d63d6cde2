/**
 * Whether a provider trigger's filter matches an event (docs/factory-files.md, "Triggers"): every key ANDed,
 * an omitted key a wildcard, `in` = any of the listed values, `not_in` = none of them, values compared in
 * their canonical forms. Pure; src/definitions/provider-events.ts says what an event's values are.
 */
import path from 'node:path';
import type { FilterMatcher } from './model.ts';
import type { Facts } from './provider-events.ts';
import { CASE_SENSITIVE_FILTER_KEYS } from './triggers.ts';

const BRANCH_KEYS = new Set(['branches', 'base_branches']);

/** A value as compared for `key`: branches without `refs/heads/`, emoji without colons or skin tone, folded case. */
export function canonicalValue(key: string, value: string | number): string {
  let text = String(value).trim();
  if (BRANCH_KEYS.has(key)) text = text.replace(/^refs\/heads\//, '');
  if (key === 'emojis')
    text = text
      .replace(/^:/, '')
      .replace(/:$/, '')
      .replace(/::skin-tone-\d$/, '');
  return CASE_SENSITIVE_FILTER_KEYS.has(key) ? text : text.toLowerCase();
}

function matchesPaths(matcher: FilterMatcher, files: readonly string[]): boolean {
  const globs = (values: FilterMatcher['in']) => (values ?? []).map(String);
  const include = matcher.in ? globs(matcher.in) : undefined;
  const exclude = globs(matcher.not_in);
  // As GitHub's own path filters: the event matches when one changed file is included and not excluded.
  return files.some(
    (file) =>
      (include === undefined || include.some((glob) => path.posix.matchesGlob(file, glob))) &&
      !exclude.some((glob) => path.posix.matchesGlob(file, glob)),
  );
}

function matchesKeywords(matcher: FilterMatcher, texts: readonly string[]): boolean {
  const haystack = texts.map((t) => t.toLowerCase());
  const found = (keyword: string | number) => haystack.some((text) => text.includes(String(keyword).toLowerCase()));
  if (matcher.in && !matcher.in.some(found)) return false;
  return !(matcher.not_in ?? []).some(found);
}

/** One key: `in` needs one of the event's values listed, `not_in` none of them listed. */
export function matchesKey(key: string, matcher: FilterMatcher, values: readonly (string | number)[]): boolean {
  if (key === 'paths') return matchesPaths(matcher, values.map(String));
  if (key === 'keywords') return matchesKeywords(matcher, values.map(String));
  const canonical = new Set(values.map((v) => canonicalValue(key, v)));
  const listed = (v: string | number) => canonical.has(canonicalValue(key, v));
  if (matcher.in && !matcher.in.some(listed)) return false;
  return !(matcher.not_in ?? []).some(listed);
}

/** Every key of the filter matches the event's facts (a key the event has no value for matches only `not_in`). */
export function matchesFilter(filter: Readonly<Record<string, FilterMatcher>>, facts: Facts): boolean {
  for (const [key, matcher] of Object.entries(filter)) {
    if (!matchesKey(key, matcher, facts[key] ?? [])) return false;
  }
  return true;
}
