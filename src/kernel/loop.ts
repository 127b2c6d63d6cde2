import type { Bus } from './bus.ts';
import { CoalescedPass } from './coalesced-pass.ts';
import type { Topic } from './topics.ts';

/** What starts a pass of a loop, besides `kick()`. */
export interface LoopTriggers {
  /** A pass every this many milliseconds (a look even without a notice: a lost NOTIFY, work left by a crash). */
  everyMs?: number;
  /** A pass when one of these topics is published (in this process, or from another through LISTEN/NOTIFY). */
  topics?: {
    bus: Bus;
    topics: readonly Topic[];
    /** Only the messages it accepts start a pass. */
    when?: (topic: Topic, data: unknown) => boolean;
    /** The pass waits this long after a message, so that a burst of them costs one pass. */
    delayMs?: number;
  };
  /** A pass at start (default true). */
  atStart?: boolean;
}

export interface LoopOptions extends LoopTriggers {
  /** Named in the logs of its failures. */
  name: string;
  /** One pass. A failure is handed to `onError` and the loop goes on. */
  pass: () => Promise<void> | void;
  onError?: (err: unknown, name: string) => void;
}

/** Lifecycle of a loop, for those (tests) that wait on it rather than poll. */
export type LoopEvent = { loop: string; event: 'pass' } | { loop: string; event: 'stopped' };

/**
 * The one way to run background work: a pass on each trigger (a timer, bus topics, `kick()`), one pass at a
 * time, and the triggers that arrive during a pass coalesced into one more pass after it (CoalescedPass).
 * `stop()` removes the triggers and resolves once the pass under way has ended. The only `setInterval` of
 * src/ is here.
 */
export class Loop {
  readonly name: string;
  readonly #options: LoopOptions;
  readonly #passes: CoalescedPass;
  readonly #listeners = new Set<(event: LoopEvent) => void>();
  #timer: NodeJS.Timeout | undefined;
  #delayed: NodeJS.Timeout | undefined;
  #unsubscribe: (() => void)[] = [];
  #started = false;
  #stopped = false;

  constructor(options: LoopOptions) {
    this.name = options.name;
    this.#options = options;
    this.#passes = new CoalescedPass(
      () => this.#run(),
      // `kick()` before `start()` runs a pass too (a caller that drives the loop itself, as tests do).
      () => !this.#stopped,
    );
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  start(): this {
    if (this.#started) return this;
    this.#started = true;
    const { everyMs, topics } = this.#options;
    if (topics) {
      for (const topic of topics.topics)
        this.#unsubscribe.push(
          topics.bus.subscribe(topic, (data) => {
            if (topics.when && !topics.when(topic, data)) return;
            if (!topics.delayMs) this.kick();
            else
              this.#delayed ??= setTimeout(() => {
                this.#delayed = undefined;
                this.kick();
              }, topics.delayMs).unref();
          }),
        );
    }
    if (everyMs !== undefined && everyMs > 0) {
      this.#timer = setInterval(() => this.kick(), everyMs);
      this.#timer.unref();
    }
    if (this.#options.atStart ?? true) this.kick();
    return this;
  }

  /** A pass now, or once more after the one under way. */
  kick(): void {
    this.#passes.request();
  }

  /** Resolves once no pass runs. */
  idle(): Promise<void> {
    return this.#passes.idle();
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    clearInterval(this.#timer);
    clearTimeout(this.#delayed);
    for (const off of this.#unsubscribe) off();
    this.#unsubscribe = [];
    await this.#passes.idle();
    this.#emit({ loop: this.name, event: 'stopped' });
  }

  /** Calls `listener` after every pass and at stop; answers the function that removes it. */
  on(listener: (event: LoopEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Resolves after the next pass that starts from now ends. */
  nextPass(): Promise<void> {
    return new Promise((resolve) => {
      const off = this.on((e) => {
        if (e.event === 'pass' || e.event === 'stopped') {
          off();
          resolve();
        }
      });
    });
  }

  async #run(): Promise<void> {
    try {
      await this.#options.pass();
    } catch (err) {
      this.#options.onError?.(err, this.name);
    }
    this.#emit({ loop: this.name, event: 'pass' });
  }

  #emit(event: LoopEvent): void {
    for (const listener of [...this.#listeners]) listener(event);
  }
}

/** Runs tasks one after another; a failed task does not stop the ones after it. */
export class SerialQueue {
  #tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T> | T): Promise<T> {
    const next = this.#tail.then(task, task);
    this.#tail = next.catch(() => {});
    return next;
  }

  /** Resolves once every task queued so far has ended. */
  async settled(): Promise<void> {
    await this.#tail;
  }
}
