import { Cron } from 'croner';

/**
 * Schedules use the robfig/cron "standard" grammar: 5 fields (minute hour day-of-month month day-of-week)
 * or a descriptor, always UTC. croner checks ranges; the robfig restrictions (no seconds field, no
 * `L`/`W`/`#`, no TZ prefix) are checked here first.
 */
const DESCRIPTORS = new Set(['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly']);

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

const GO_DURATION = /^(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$/;

function durationSeconds(text: string): number {
  const units: Record<string, number> = { ns: 1e-9, us: 1e-6, µs: 1e-6, μs: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };
  let total = 0;
  for (const m of text.matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g)) total += Number(m[1]) * units[m[2]!]!;
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

/** undefined when `expression` is a valid schedule, else why not. */
export function checkCron(expression: string): string | undefined {
  const expr = expression.trim();
  if (/^(CRON_)?TZ=/i.test(expr))
    return 'time zones are not supported; schedules always run in UTC (remove the TZ= prefix)';
  if (expr.startsWith('@')) {
    if (DESCRIPTORS.has(expr)) return undefined;
    const every = /^@every\s+(\S+)$/.exec(expr);
    if (every) {
      if (!GO_DURATION.test(every[1]!)) return `\`${every[1]}\` is not a duration like 90s, 15m or 1h30m`;
      if (durationSeconds(every[1]!) <= 0) return '@every needs a positive duration';
      return undefined;
    }
    return `unknown descriptor \`${expr.split(/\s/)[0]}\`; use @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every <duration>`;
  }
  const fields = expr.split(/\s+/);
  if (fields.length !== 5) {
    return `a cron expression has 5 fields (minute hour day-of-month month day-of-week); this one has ${fields.length}`;
  }
  for (let i = 0; i < 5; i++) {
    const problem = checkField(fields[i]!, FIELDS[i]!);
    if (problem) return problem;
  }
  try {
    new Cron(expr, { paused: true, timezone: 'UTC' }).stop();
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  return undefined;
}
