import type { Bus } from './bus.ts';
import { CoalescedPass } from './coalesced-pass.ts';
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
  readonly #options: DrainLoopOptions;
  readonly #passes: CoalescedPass;
  #stopped = false;
  #timer: NodeJS.Timeout | undefined;
  #unsubscribe: (() => void) | undefined;

  constructor(options: DrainLoopOptions) {
    this.#options = options;
    this.#passes = new CoalescedPass(
      () => this.drain(),
      () => !this.#stopped,
    );
  }

  /** Takes work until the queue is empty or the loop stopped; handles its own errors (must not reject). */
  protected abstract drain(): Promise<void>;

  /** True once `stop` was called: a drain in progress ends at its next item. */
  get stopped(): boolean {
    return this.#stopped;
  }

  start(): void {
    this.#unsubscribe = this.#options.bus.subscribe(this.#options.topic, () => this.kick());
    this.#timer = setInterval(() => this.kick(), this.#options.pollIntervalMs);
    this.#timer.unref();
    this.kick();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribe?.();
    clearInterval(this.#timer);
    await this.#passes.idle();
  }

  /** Drains now, or once more after the pass under way. */
  kick(): void {
    this.#passes.request();
  }

  /** Resolves when no pass runs (for tests and shutdown). */
  idle(): Promise<void> {
    return this.#passes.idle();
  }
}
