import { Cron } from 'croner';
import { CRON_OPTIONS, parseSchedule } from '../definitions/cron.ts';

/**
 * When a schedule fires. The expression is parsed by the factory validator's parser (src/definitions/cron.ts),
 * so a schedule accepted by the API and one accepted in an automation file are the same language. croner
 * computes the fire times; `@every <duration>` is a fixed interval, as in robfig/cron.
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

export class InvalidCronError extends Error {}

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
    this.#cron = new Cron(fields, CRON_OPTIONS);
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
  const parsed = parseSchedule(expr);
  if ('problem' in parsed) throw new InvalidCronError(parsed.problem);
  if (parsed.spec.kind === 'every') return new IntervalFireTimes(expr, parsed.spec.intervalMs);
  return new CronFireTimes(expr, parsed.spec.fields);
}
