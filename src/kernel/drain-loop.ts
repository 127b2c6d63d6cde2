import type { Bus } from './bus.ts';
import { Loop } from './loop.ts';
import type { Topic } from './topics.ts';

export interface DrainLoopOptions {
  bus: Bus;
  /** The topic on which others announce new work. */
  topic: Topic;
  /** A look even without an announcement: work left by a crashed process, a lost notice, a retry come due. */
  pollIntervalMs: number;
}

/**
 * Drains a durable queue whose new work is announced on a bus topic: a pass at start, on every announcement and
 * every poll interval, one pass at a time (CoalescedPass). Used by the outbox evaluator and the integration jobs.
 */
export abstract class DrainLoop {
  readonly #loop: Loop;

  constructor(options: DrainLoopOptions) {
    this.#loop = new Loop({
      name: new.target.name,
      everyMs: options.pollIntervalMs,
      topics: { bus: options.bus, topics: [options.topic] },
      pass: () => this.drain(),
    });
  }

  /** Takes work until the queue is empty or the loop stopped; handles its own errors (must not reject). */
  protected abstract drain(): Promise<void>;

  /** True once `stop` was called: a drain in progress ends at its next item. */
  get stopped(): boolean {
    return this.#loop.stopped;
  }

  start(): void {
    this.#loop.start();
  }

  async stop(): Promise<void> {
    await this.#loop.stop();
  }

  /** Drains now, or once more after the pass under way. */
  kick(): void {
    this.#loop.kick();
  }

  /** Resolves when no pass runs (for tests and shutdown). */
  idle(): Promise<void> {
    return this.#loop.idle();
  }

  /** The loop's lifecycle (a pass ended, the loop stopped), for tests that wait on it. */
  get loop(): Loop {
    return this.#loop;
  }
}
