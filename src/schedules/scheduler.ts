import { SCHEDULES_CHANGED_TOPIC, SCHEDULES_FIRED_TOPIC } from '../kernel/topics.ts';
import type { RunService } from '../runs/service.ts';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Logger } from '../kernel/log.ts';
import type { Bus } from '../kernel/bus.ts';
import type { Db } from '../kernel/db.ts';
import { systemClock } from '../kernel/clock.ts';
import type { Clock } from '../kernel/clock.ts';
import { fireDueSchedules } from './fire.ts';
import type { FireOutcome } from './fire.ts';
import * as sql from './sql.ts';

/** Look at the database at least this often, in case a change notice from another process was lost. */
const MAX_IDLE_MS = 30_000;
/** When the earliest due schedule is held by another process, look again after this long. */
const BUSY_RETRY_MS = 250;
const FIRE_LOG_RETENTION_MS = 7 * 24 * 3600_000;
const PRUNE_EVERY_MS = 3600_000;

export interface SchedulerOptions {
  db: Db;
  bus: Bus;
  clock: Clock;
  log: Logger;
  /** Where the fires' runs are created. */
  runs: RunService;
}

/**
 * The scheduler loop of one process: fire what is due, then sleep until the earliest next fire (or a
 * change notice). Any number of processes may run it on one database.
 */
export class Scheduler {
  readonly #db: Db;
  readonly #bus: Bus;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #runs: RunService;
  readonly #id = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  readonly #stop = new AbortController();
  #wake = new AbortController();
  #loop: Promise<void> | undefined;
  #unsubscribe: (() => void) | undefined;
  #lastPrune = 0;

  constructor(options: SchedulerOptions) {
    this.#db = options.db;
    this.#bus = options.bus;
    this.#clock = options.clock;
    this.#log = options.log;
    this.#runs = options.runs;
  }

  get id(): string {
    return this.#id;
  }

  start(): void {
    this.#unsubscribe = this.#bus.subscribe(SCHEDULES_CHANGED_TOPIC, () => this.wake());
    this.#loop = this.#run();
  }

  /** Look at the schedules again now (one changed). */
  wake(): void {
    this.#wake.abort();
  }

  async stop(): Promise<void> {
    this.#unsubscribe?.();
    this.#stop.abort();
    await this.#loop;
  }

  /** Fires what is due now and announces the runs. */
  async tick(): Promise<FireOutcome & { now: Date }> {
    const now = this.#clock.now();
    const outcome = await fireDueSchedules(this.#db, { now, firedBy: this.#id, runs: this.#runs });
    this.#runs.announce(outcome.runs.map((r) => ({ id: r.run_id, worker_host: r.worker_host })));
    await this.#runs.announceMoved(outcome.superseded);
    if (outcome.fired) {
      this.#log.info({ fired: outcome.fired, runs: outcome.runs.length }, 'schedules fired');
      await this.#bus
        .publish(SCHEDULES_FIRED_TOPIC, { fired: outcome.fired, runs: outcome.runs.length })
        .catch(() => {});
    }
    if (now.getTime() - this.#lastPrune >= PRUNE_EVERY_MS) {
      this.#lastPrune = now.getTime();
      await sql.pruneFires(this.#db, new Date(now.getTime() - FIRE_LOG_RETENTION_MS));
    }
    return { ...outcome, now };
  }

  async #run(): Promise<void> {
    while (!this.#stop.signal.aborted) {
      // A fresh wake signal before looking, so that a change arriving meanwhile is not slept through.
      this.#wake = new AbortController();
      let wait = MAX_IDLE_MS;
      // Waiting out a lock holder or a failure is measured in real time, whatever clock the schedules keep:
      // a test clock that stands still must not leave a due schedule unfired.
      let sleeper: Clock = this.#clock;
      try {
        const { now } = await this.tick();
        const next = await sql.earliestNextRun(this.#db);
        if (next && next <= now) {
          // Still due at the time this tick looked: another process (or this one's schedule sync) holds it.
          wait = BUSY_RETRY_MS;
          sleeper = systemClock;
        } else if (next) {
          // Due only since this tick looked: look again now.
          wait = Math.min(Math.max(0, next.getTime() - this.#clock.now().getTime()), MAX_IDLE_MS);
        }
        if (wait === 0) continue;
      } catch (err) {
        if (this.#stop.signal.aborted) return;
        this.#log.error({ err }, 'scheduler tick failed');
        wait = 1000;
        sleeper = systemClock;
      }
      await sleeper.sleep(wait, AbortSignal.any([this.#stop.signal, this.#wake.signal]));
    }
  }
}
