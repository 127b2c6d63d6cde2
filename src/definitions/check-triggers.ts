import type { DiagnosticCode } from './codes.ts';
import type { ValidationContext } from './context.ts';
import { checkCron } from './cron.ts';
import { WEBHOOK_UID_FORMAT, isWebhookUid } from './ids.ts';
import { didYouMean } from './levenshtein.ts';
import type { FilterMatcher, Trigger } from './model.ts';
import { checkPayloadFilter } from './payload-filter-grammar.ts';
import {
  CASE_SENSITIVE_FILTER_KEYS,
  FILTER_KEY_ALIASES,
  IN_ONLY_FILTER_KEYS,
  INTEGER_FILTER_KEYS,
  TRIGGER_CATALOGUE,
  TRIGGER_PROVIDERS_RUN_HERE,
  UUID_FILTER_KEYS,
} from './triggers.ts';

export interface TriggerReportOptions {
  target?: 'key' | 'value';
  severity?: 'error' | 'warning';
}

/** What trigger checks need from the file being validated. Pointers are relative to the frontmatter root. */
export interface TriggerEnv {
  report(code: DiagnosticCode, pointer: string, message: string, options?: TriggerReportOptions): void;
  webhookFileNames: ReadonlySet<string>;
  context: ValidationContext | undefined;
  notRun(check: 'webhook_uid', pointer: string, subject: string): void;
  /** A name alias to resolve at apply; `matcher.in` holds the names and is replaced by their IDs when resolved. */
  deferred(pointer: string, field: string, kind: string, matcher: FilterMatcher): void;
}

/** The raw trigger after the schema check: provider/event are non-empty strings, filter a mapping. */
export interface RawTrigger {
  provider: string;
  event: string;
  filter?: Record<string, unknown>;
  schedule?: { name?: string; cron: string };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function seg(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

/**
 * A filter value: a bare list (= `in`) or `{in, not_in}`. Returns the matcher, or undefined after reporting.
 */
function checkMatcher(
  env: TriggerEnv,
  pointer: string,
  key: string,
  value: unknown,
  options: { inOnly: boolean; nameAlias: boolean },
): FilterMatcher | undefined {
  const integers = INTEGER_FILTER_KEYS.has(key);
  const checkValues = (list: unknown[], at: string): boolean => {
    let ok = true;
    list.forEach((item, i) => {
      const good = integers ? Number.isInteger(item) : typeof item === 'string' && item.trim() !== '';
      if (!good) {
        env.report(
          'FF_INVALID_FILTER',
          `${at}/${i}`,
          `\`${key}\` values must be ${integers ? 'integers' : 'non-empty strings'}`,
        );
        ok = false;
      } else if (UUID_FILTER_KEYS.has(key) && !options.nameAlias && typeof item === 'string' && !UUID.test(item)) {
        env.report('FF_INVALID_FILTER', `${at}/${i}`, `\`${key}\` values are Linear UUIDs; \`${item}\` is not one`);
        ok = false;
      }
    });
    return ok;
  };
  if (Array.isArray(value)) {
    return checkValues(value, pointer) ? { in: value as (string | number)[] } : undefined;
  }
  if (options.nameAlias) {
    env.report(
      'FF_INVALID_FILTER',
      pointer,
      `\`${key}\` is a name alias: a plain list of names (no \`in\`/\`not_in\`)`,
    );
    return undefined;
  }
  if (!isMapping(value)) {
    env.report(
      'FF_INVALID_FILTER',
      pointer,
      `\`${key}\` must be a list of values or a mapping with \`in\` and/or \`not_in\``,
    );
    return undefined;
  }
  const matcher: FilterMatcher = {};
  let ok = true;
  for (const [op, list] of Object.entries(value)) {
    const at = `${pointer}/${seg(op)}`;
    if (op !== 'in' && op !== 'not_in') {
      env.report(
        'FF_INVALID_FILTER',
        at,
        `unknown matcher \`${op}\` in \`${key}\`; use \`in\` or \`not_in\`${didYouMean(op, ['in', 'not_in'])}`,
        { target: 'key' },
      );
      ok = false;
      continue;
    }
    if (op === 'not_in' && options.inOnly) {
      env.report('FF_INVALID_FILTER', at, `\`${key}\` accepts only \`in\``, { target: 'key' });
      ok = false;
      continue;
    }
    if (!Array.isArray(list)) {
      env.report('FF_INVALID_FILTER', at, `\`${op}\` takes a list of values`);
      ok = false;
      continue;
    }
    if (!checkValues(list, at)) ok = false;
    matcher[op] = list as (string | number)[];
  }
  if (ok && matcher.in === undefined && matcher.not_in === undefined) {
    env.report('FF_INVALID_FILTER', pointer, `\`${key}\` needs \`in\` or \`not_in\``);
    return undefined;
  }
  if (ok && matcher.in && matcher.not_in) {
    const fold = (v: string | number): string =>
      CASE_SENSITIVE_FILTER_KEYS.has(key) ? String(v) : String(v).toLowerCase();
    const excluded = new Set(matcher.not_in.map(fold));
    const both = matcher.in.find((v) => excluded.has(fold(v)));
    if (both !== undefined) {
      env.report(
        'FF_INVALID_FILTER',
        pointer,
        `\`${key}\` lists ${JSON.stringify(both)} in both \`in\` and \`not_in\``,
      );
      return undefined;
    }
  }
  return ok ? matcher : undefined;
}

function checkWebhookTrigger(env: TriggerEnv, base: string, raw: RawTrigger): Trigger | undefined {
  if (raw.schedule !== undefined) {
    env.report(
      'FF_INVALID_TRIGGER',
      `${base}/schedule`,
      '`schedule` is only valid on a `schedule`/`cron_fired` trigger',
      { target: 'key' },
    );
  }
  const filter = raw.filter ?? {};
  let ok = raw.schedule === undefined;
  for (const key of Object.keys(filter)) {
    if (key !== 'webhook_ids' && key !== 'payload') {
      env.report(
        'FF_INVALID_FILTER',
        `${base}/filter/${seg(key)}`,
        `\`${key}\` is not a filter key of webhook/received (use \`webhook_ids\` and \`payload\`)${didYouMean(key, ['webhook_ids', 'payload'])}`,
        { target: 'key' },
      );
      ok = false;
    }
  }
  const idsPointer = `${base}/filter/webhook_ids`;
  if (!('webhook_ids' in filter)) {
    env.report(
      'FF_MISSING_REQUIRED',
      raw.filter ? `${base}/filter` : base,
      'a webhook trigger needs `filter.webhook_ids` with one webhook: its file name or its UID',
    );
    return undefined;
  }
  const matcher = checkMatcher(env, idsPointer, 'webhook_ids', filter.webhook_ids, { inOnly: true, nameAlias: false });
  if (!matcher) return undefined;
  const ids = matcher.in ?? [];
  const listPointer = Array.isArray(filter.webhook_ids) ? idsPointer : `${idsPointer}/in`;
  if (ids.length !== 1) {
    env.report(
      'FF_INVALID_TRIGGER',
      listPointer,
      `\`webhook_ids\` must hold exactly one webhook, by file name or UID (it has ${ids.length}); use one trigger per webhook`,
    );
    return undefined;
  }
  const ref = String(ids[0]);
  const refPointer = `${listPointer}/0`;
  const context = env.context;
  // A webhook file's name (`ci` for webhooks/ci.yaml) is resolved to its UID at apply: a tree can name its
  // webhooks before they have UIDs, and works unchanged on another factory.
  const byName = env.webhookFileNames.has(ref);
  const isUid: boolean = isWebhookUid(ref);
  if (!byName) {
    if (!isUid && ref.startsWith('wh_')) {
      env.report('FF_INVALID_FILTER', refPointer, `\`${ref}\` is not a webhook UID (${WEBHOOK_UID_FORMAT})`);
      return undefined;
    }
    if (!isUid) {
      const names = [...env.webhookFileNames];
      const hint = didYouMean(ref, names);
      env.report(
        'FF_INVALID_REFERENCE',
        refPointer,
        names.length === 0
          ? `\`${ref}\` is not a webhook UID (${WEBHOOK_UID_FORMAT}), and the tree has no webhooks/ file to name`
          : `\`${ref}\` is neither a webhook file name (no webhooks/${ref}.yaml) nor a webhook UID (${WEBHOOK_UID_FORMAT})${hint}`,
      );
      return undefined;
    }
    if (context?.knownWebhookUids) {
      if (!context.knownWebhookUids.has(ref)) {
        env.report('FF_INVALID_REFERENCE', refPointer, `no webhook of this factory has the UID ${ref}`);
        return undefined;
      }
    } else {
      env.notRun('webhook_uid', refPointer, ref);
    }
  }
  let payload: Record<string, unknown> | null = null;
  if ('payload' in filter) {
    const problems = checkPayloadFilter(filter.payload);
    for (const p of problems) {
      env.report(
        'FF_INVALID_FILTER',
        `${base}/filter/payload${p.path}`,
        p.message,
        p.severity ? { target: 'key', severity: p.severity } : {},
      );
    }
    if (problems.some((p) => !p.severity)) return undefined;
    payload = filter.payload as Record<string, unknown>;
  }
  return ok
    ? {
        kind: 'webhook',
        provider: 'webhook',
        event: 'received',
        webhookUid: byName ? null : ref,
        webhookName: byName ? ref : null,
        payload,
      }
    : undefined;
}

interface ScheduleNames {
  names: Set<string>;
  unnamed: number;
}

function checkScheduleTrigger(
  env: TriggerEnv,
  base: string,
  raw: RawTrigger,
  seen: ScheduleNames,
): Trigger | undefined {
  const filter = raw.filter ?? {};
  let ok = true;
  for (const key of Object.keys(filter)) {
    if (key !== 'schedule_ids') {
      env.report(
        'FF_INVALID_FILTER',
        `${base}/filter/${seg(key)}`,
        `\`${key}\` is not a filter key of schedule/cron_fired (only \`schedule_ids\`)${didYouMean(key, ['schedule_ids'])}`,
        { target: 'key' },
      );
      ok = false;
    }
  }
  let scheduleIds: string[] = [];
  if ('schedule_ids' in filter) {
    const matcher = checkMatcher(env, `${base}/filter/schedule_ids`, 'schedule_ids', filter.schedule_ids, {
      inOnly: true,
      nameAlias: false,
    });
    if (!matcher) ok = false;
    else scheduleIds = (matcher.in ?? []).map(String);
  }
  const hasInline = raw.schedule !== undefined;
  if (hasInline === scheduleIds.length > 0) {
    env.report(
      'FF_INVALID_TRIGGER',
      base,
      hasInline
        ? 'a schedule trigger takes either an inline `schedule` or `filter.schedule_ids`, not both'
        : 'a schedule trigger needs an inline `schedule: {cron: …}` or a non-empty `filter.schedule_ids`',
    );
    return undefined;
  }
  let schedule: { name: string | null; cron: string } | null = null;
  if (raw.schedule) {
    const problem = checkCron(raw.schedule.cron);
    if (problem) {
      env.report('FF_INVALID_VALUE', `${base}/schedule/cron`, `invalid cron expression: ${problem}`);
      ok = false;
    }
    const name = raw.schedule.name ?? null;
    if (name === null) {
      seen.unnamed++;
      if (seen.unnamed > 1) {
        reportScheduleKey(env, base, 'at most one schedule of an automation may be unnamed; give it a `name`');
        ok = false;
      }
    } else if (seen.names.has(name)) {
      env.report(
        'FF_INVALID_TRIGGER',
        `${base}/schedule/name`,
        `another schedule of this automation is named \`${name}\``,
      );
      ok = false;
    } else {
      seen.names.add(name);
    }
    schedule = { name, cron: raw.schedule.cron.trim() };
  }
  return ok ? { kind: 'schedule', provider: 'schedule', event: 'cron_fired', schedule, scheduleIds } : undefined;
}

/** A trigger's `schedule` key refused as a whole (the diagnostic points at the key). */
function reportScheduleKey(env: TriggerEnv, base: string, message: string): void {
  env.report('FF_INVALID_TRIGGER', `${base}/schedule`, message, { target: 'key' });
}

function checkProviderTrigger(
  env: TriggerEnv,
  base: string,
  raw: RawTrigger,
  events: Record<string, string[]>,
): Trigger | undefined {
  const keys = events[raw.event];
  if (!keys) {
    env.report(
      'FF_INVALID_EVENT',
      `${base}/event`,
      `unknown ${raw.provider} event \`${raw.event}\`${didYouMean(raw.event, Object.keys(events))}`,
    );
    return undefined;
  }
  let ok = true;
  if (raw.schedule !== undefined) {
    reportScheduleKey(env, base, '`schedule` is only valid on a `schedule`/`cron_fired` trigger');
    ok = false;
  }
  const aliases = FILTER_KEY_ALIASES[raw.provider] ?? {};
  const filter: Record<string, FilterMatcher> = {};
  const spelledAs = new Map<string, string>();
  for (const [key, value] of Object.entries(raw.filter ?? {})) {
    const pointer = `${base}/filter/${seg(key)}`;
    const alias = aliases[key];
    const canonical = alias?.canonical ?? key;
    if (!keys.includes(canonical)) {
      const known = [...keys, ...Object.keys(aliases).filter((a) => keys.includes(aliases[a]!.canonical))];
      env.report(
        'FF_INVALID_FILTER',
        pointer,
        `\`${key}\` is not a filter key of ${raw.provider}/${raw.event} (allowed: ${keys.join(', ')})${didYouMean(key, known)}`,
        { target: 'key' },
      );
      ok = false;
      continue;
    }
    const earlier = spelledAs.get(canonical);
    if (earlier !== undefined) {
      env.report('FF_INVALID_FILTER', pointer, `\`${key}\` and \`${earlier}\` are the same filter; keep one`, {
        target: 'key',
      });
      ok = false;
      continue;
    }
    spelledAs.set(canonical, key);
    const matcher = checkMatcher(env, pointer, canonical, value, {
      inOnly: IN_ONLY_FILTER_KEYS.has(canonical),
      nameAlias: alias?.nameAlias ?? false,
    });
    if (!matcher) {
      ok = false;
      continue;
    }
    if (alias?.nameAlias) env.deferred(pointer, key, `${raw.provider}_name_alias`, matcher);
    filter[canonical] = matcher;
  }
  return ok
    ? {
        kind: 'provider',
        provider: raw.provider,
        event: raw.event,
        filter,
        runsHere: TRIGGER_PROVIDERS_RUN_HERE.has(raw.provider),
      }
    : undefined;
}

/** Checks one trigger (after the schema check) and returns its normalised form, or undefined after reporting. */
export function checkTrigger(
  env: TriggerEnv,
  base: string,
  raw: RawTrigger,
  schedules: ScheduleNames,
): Trigger | undefined {
  const events = TRIGGER_CATALOGUE[raw.provider];
  if (!events) {
    env.report(
      'FF_INVALID_EVENT',
      `${base}/provider`,
      `unknown trigger provider \`${raw.provider}\`${didYouMean(raw.provider, Object.keys(TRIGGER_CATALOGUE))}`,
    );
    return undefined;
  }
  if (!TRIGGER_PROVIDERS_RUN_HERE.has(raw.provider)) {
    env.report(
      'FF_NOT_SUPPORTED_HERE',
      `${base}/provider`,
      `\`${raw.provider}\` triggers are accepted but this service does not receive ${raw.provider} events; the automation will not fire from this trigger`,
      { severity: 'warning' },
    );
  }
  if (raw.provider === 'webhook' || raw.provider === 'schedule') {
    if (!events[raw.event]) {
      env.report(
        'FF_INVALID_EVENT',
        `${base}/event`,
        `unknown ${raw.provider} event \`${raw.event}\` (use \`${Object.keys(events)[0]}\`)`,
      );
      return undefined;
    }
    return raw.provider === 'webhook'
      ? checkWebhookTrigger(env, base, raw)
      : checkScheduleTrigger(env, base, raw, schedules);
  }
  return checkProviderTrigger(env, base, raw, events);
}

export function newScheduleNames(): ScheduleNames {
  return { names: new Set(), unnamed: 0 };
}
