import { Cron } from 'croner';
import type { CronOptions } from 'croner';

/**
 * The one parser of schedule expressions, for the factory validator and the scheduler alike: the robfig/cron
 * "standard" grammar, 5 fields (minute hour day-of-month month day-of-week) or a descriptor, always UTC.
 * croner checks ranges and computes fire times; the robfig restrictions (no seconds field, no `L`/`W`/`#`,
 * no TZ prefix) and `@every <Go duration>` (which croner lacks) are handled here.
 */
export const CRON_DESCRIPTORS: Readonly<Record<string, string>> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

/** croner's options for robfig semantics: 5 fields, UTC, a restricted day-of-month OR day-of-week. */
export const CRON_OPTIONS: CronOptions = { timezone: 'UTC', paused: true, mode: '5-part', domAndDow: false };

/** A checked schedule: a fixed interval (`@every`) or 5 cron fields (a descriptor expanded). */
export type ScheduleSpec =
  | { readonly kind: 'every'; readonly intervalMs: number }
  | { readonly kind: 'cron'; readonly fields: string };

const FIELDS = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31 },
  {
    name: 'month',
    min: 1,
    max: 12,
    names: ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'],
  },
  { name: 'day-of-week', min: 0, max: 6, names: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] },
] as const;

const DURATION_PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g;
const GO_DURATION = /^(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$/;
const UNIT_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** Whether `text` is a Go duration (`90s`, `1h30m`, `1.5h`; no sign, no `d`). */
export function isGoDuration(text: string): boolean {
  return GO_DURATION.test(text);
}

/** A Go duration in milliseconds (0 for text that is not one). */
export function goDurationMs(text: string): number {
  let total = 0;
  for (const m of text.matchAll(DURATION_PART)) total += Number(m[1]) * UNIT_MS[m[2]!]!;
  return total;
}

function checkValue(raw: string, field: (typeof FIELDS)[number]): string | undefined {
  const lower = raw.toLowerCase();
  const names: readonly string[] = 'names' in field ? field.names : [];
  const index = names.indexOf(lower);
  const value = index >= 0 ? index + (field.min === 1 ? 1 : 0) : /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (Number.isNaN(value)) return `\`${raw}\` is not a valid ${field.name} value`;
  if (value < field.min || value > field.max) return `${field.name} value ${raw} is outside ${field.min}-${field.max}`;
  return undefined;
}

function checkField(text: string, field: (typeof FIELDS)[number]): string | undefined {
  for (const item of text.split(',')) {
    const m = /^([^/]+)(?:\/(\d+))?$/.exec(item);
    if (!m) return `\`${item}\` is not a valid ${field.name} expression`;
    const [, range, step] = m;
    if (step !== undefined && Number(step) === 0) return `step 0 in \`${item}\``;
    if (range === '*' || (range === '?' && (field.name === 'day-of-month' || field.name === 'day-of-week'))) continue;
    const bounds = range!.split('-');
    if (bounds.length > 2) return `\`${item}\` is not a valid ${field.name} range`;
    for (const b of bounds) {
      const problem = checkValue(b, field);
      if (problem) return problem;
    }
  }
  return undefined;
}

/** Parses a schedule expression: its spec, or why it is not one. */
export function parseSchedule(expression: string): { spec: ScheduleSpec } | { problem: string } {
  const expr = expression.trim();
  if (/^(CRON_)?TZ=/i.test(expr))
    return { problem: 'time zones are not supported; schedules always run in UTC (remove the TZ= prefix)' };
  if (expr.startsWith('@')) {
    const descriptor = CRON_DESCRIPTORS[expr];
    if (descriptor) return { spec: { kind: 'cron', fields: descriptor } };
    const every = /^@every\s+(\S+)$/.exec(expr);
    if (every) {
      if (!isGoDuration(every[1]!)) return { problem: `\`${every[1]}\` is not a duration like 90s, 15m or 1h30m` };
      const ms = goDurationMs(every[1]!);
      if (ms <= 0) return { problem: '@every needs a positive duration' };
      // Like robfig's `Every`: whole seconds, at least one.
      return { spec: { kind: 'every', intervalMs: Math.max(1000, Math.floor(ms / 1000) * 1000) } };
    }
    return {
      problem: `unknown descriptor \`${expr.split(/\s/)[0]}\`; use @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every <duration>`,
    };
  }
  const fields = expr.split(/\s+/);
  if (fields.length !== 5) {
    return {
      problem: `a cron expression has 5 fields (minute hour day-of-month month day-of-week); this one has ${fields.length}`,
    };
  }
  for (let i = 0; i < 5; i++) {
    const problem = checkField(fields[i]!, FIELDS[i]!);
    if (problem) return { problem };
  }
  const joined = fields.join(' ');
  try {
    new Cron(joined, CRON_OPTIONS).stop();
  } catch (error) {
    return { problem: error instanceof Error ? error.message : String(error) };
  }
  return { spec: { kind: 'cron', fields: joined } };
}

/** undefined when `expression` is a valid schedule, else why not. */
export function checkCron(expression: string): string | undefined {
  const parsed = parseSchedule(expression);
  return 'problem' in parsed ? parsed.problem : undefined;
}
