import { Cron } from 'croner';
import { checkCron } from '../definitions/cron.ts';

/**
 * When a schedule fires: a robfig/cron expression (5 fields or a descriptor), always in UTC. The grammar
 * check is the factory validator's (src/definitions/cron.ts), so a schedule accepted by the API and one
 * accepted in an automation file are the same language. croner computes the fire times; `@every <duration>`
 * (which croner lacks) is a fixed interval, as in robfig/cron.
 */
export interface FireTimes {
  readonly expression: string;
  /** The first fire time strictly after `after`. */
  nextAfter(after: Date): Date;
  /**
   * The next fire time once the slot `firedFor` has fired at `now`: the first slot strictly after `now`
   * (missed slots in between are skipped, not replayed).
   */
  nextAfterFire(firedFor: Date, now: Date): Date;
}

/** robfig's descriptors as 5-field expressions. */
const DESCRIPTORS: Readonly<Record<string, string>> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

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

/** A Go duration (`90s`, `1h30m`, `1.5h`) in milliseconds. */
export function goDurationMs(text: string): number {
  let total = 0;
  for (const m of text.matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g))
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
  return total;
}

export class InvalidCronError extends Error {}

/** Like robfig's `Every`: whole seconds, at least one. */
function everyIntervalMs(duration: string): number {
  return Math.max(1000, Math.floor(goDurationMs(duration) / 1000) * 1000);
}

function truncateToSecond(date: Date): number {
  return Math.floor(date.getTime() / 1000) * 1000;
}

class IntervalFireTimes implements FireTimes {
  readonly expression: string;
  readonly #intervalMs: number;

  constructor(expression: string, intervalMs: number) {
    this.expression = expression;
    this.#intervalMs = intervalMs;
  }

  nextAfter(after: Date): Date {
    return new Date(truncateToSecond(after) + this.#intervalMs);
  }

  nextAfterFire(firedFor: Date, now: Date): Date {
    // Keep the cadence of the slot that fired; jump over slots that passed while nobody was running.
    const behind = now.getTime() - firedFor.getTime();
    const steps = behind < 0 ? 1 : Math.floor(behind / this.#intervalMs) + 1;
    return new Date(firedFor.getTime() + steps * this.#intervalMs);
  }
}

class CronFireTimes implements FireTimes {
  readonly expression: string;
  readonly #cron: Cron;

  constructor(expression: string, fields: string) {
    this.expression = expression;
    this.#cron = new Cron(fields, { timezone: 'UTC', paused: true, mode: '5-part', domAndDow: false });
  }

  nextAfter(after: Date): Date {
    const next = this.#cron.nextRun(after);
    // A valid 5-field expression always has a next time (at worst a leap day).
    if (!next) throw new InvalidCronError(`${this.expression} never fires`);
    return next;
  }

  nextAfterFire(firedFor: Date, now: Date): Date {
    return this.nextAfter(now.getTime() > firedFor.getTime() ? now : firedFor);
  }
}

/** Parses a schedule expression; throws InvalidCronError saying what is wrong. */
export function parseCron(expression: string): FireTimes {
  const expr = expression.trim();
  const problem = checkCron(expr);
  if (problem) throw new InvalidCronError(problem);
  const every = /^@every\s+(\S+)$/.exec(expr);
  if (every) return new IntervalFireTimes(expr, everyIntervalMs(every[1]!));
  const fields = DESCRIPTORS[expr] ?? expr.split(/\s+/).join(' ');
  try {
    return new CronFireTimes(expr, fields);
  } catch (err) {
    throw new InvalidCronError(err instanceof Error ? err.message : String(err));
  }
}

/** undefined when valid, else why not. */
export function cronProblem(expression: string): string | undefined {
  try {
    parseCron(expression);
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}
