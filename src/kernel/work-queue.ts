import { systemClock } from './clock.ts';
import type { Clock } from './clock.ts';

export interface WorkQueueOptions {
  /** First retry delay of a failing key; doubles per failure up to `maxDelayMs`. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Overall retry rate (token bucket): retries per second and burst. */
  retriesPerSecond?: number;
  burst?: number;
  clock?: Clock;
}

interface Delayed {
  at: number;
  cancel: AbortController;
}

/**
 * A keyed work queue in the manner of client-go's rate-limited queue, shared by the reconcile loops of
 * factories and the operator's controllers:
 * - a key waits in the queue at most once, however often it is added;
 * - a key is never handed to two workers at once: added while in progress, it is queued again when done;
 * - `addAfter` delays a key (the earliest pending delay wins); `addRateLimited` delays it by its own
 *   exponential back-off and an overall token bucket, until `forget` resets it;
 * - `process` hands keys to a handler, at most `concurrency` at a time; `shutDown` drains it.
 */
export class WorkQueue {
  readonly #queue: string[] = [];
  readonly #queued = new Set<string>();
  readonly #processing = new Set<string>();
  readonly #dirty = new Set<string>();
  readonly #delayed = new Map<string, Delayed>();
  readonly #failures = new Map<string, number>();
  readonly #waiters: ((key: string | undefined) => void)[] = [];
  readonly #doneListeners = new Set<(key: string) => void>();
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #rate: number;
  readonly #burst: number;
  readonly #clock: Clock;
  #tokens: number;
  #tokensAt: number;
  #shuttingDown = false;

  constructor(options: WorkQueueOptions = {}) {
    this.#baseDelayMs = options.baseDelayMs ?? 1_000;
    this.#maxDelayMs = options.maxDelayMs ?? 5 * 60_000;
    this.#rate = options.retriesPerSecond ?? 10;
    this.#burst = options.burst ?? 100;
    this.#clock = options.clock ?? systemClock;
    this.#tokens = this.#burst;
    this.#tokensAt = this.#now();
  }

  #now(): number {
    return this.#clock.now().getTime();
  }

  /** Keys waiting to be processed (not counting delayed ones). */
  get length(): number {
    return this.#queue.length;
  }

  /** Keys waiting for a delay to pass. */
  get delayed(): number {
    return this.#delayed.size;
  }

  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  add(key: string): void {
    if (this.#shuttingDown) return;
    this.#cancelDelay(key);
    if (this.#processing.has(key)) {
      this.#dirty.add(key);
      return;
    }
    if (this.#queued.has(key)) return;
    const waiter = this.#waiters.shift();
    if (waiter) {
      this.#processing.add(key);
      waiter(key);
      return;
    }
    this.#queued.add(key);
    this.#queue.push(key);
  }

  addAfter(key: string, delayMs: number): void {
    if (this.#shuttingDown) return;
    if (delayMs <= 0) return this.add(key);
    if (this.#queued.has(key)) return;
    const at = this.#now() + delayMs;
    const existing = this.#delayed.get(key);
    if (existing && existing.at <= at) return;
    existing?.cancel.abort();
    const entry: Delayed = { at, cancel: new AbortController() };
    this.#delayed.set(key, entry);
    void this.#clock.sleep(delayMs, entry.cancel.signal).then(() => {
      if (entry.cancel.signal.aborted || this.#delayed.get(key) !== entry) return;
      this.#delayed.delete(key);
      this.add(key);
    });
  }

  /** Queues the key again after its back-off (per key, doubling) or the overall rate limit, whichever is longer. */
  addRateLimited(key: string): number {
    const failures = this.#failures.get(key) ?? 0;
    this.#failures.set(key, failures + 1);
    const backoff = Math.min(this.#baseDelayMs * 2 ** failures, this.#maxDelayMs);
    const delay = Math.max(backoff, this.#bucketDelay());
    this.addAfter(key, delay);
    return delay;
  }

  #bucketDelay(): number {
    const now = this.#now();
    this.#tokens = Math.min(this.#burst, this.#tokens + ((now - this.#tokensAt) / 1000) * this.#rate);
    this.#tokensAt = now;
    this.#tokens -= 1;
    return this.#tokens >= 0 ? 0 : Math.ceil((-this.#tokens / this.#rate) * 1000);
  }

  /** How many times in a row the key failed. */
  failures(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  /** Resets the key's back-off (it succeeded). */
  forget(key: string): void {
    this.#failures.delete(key);
  }

  /** Drops a key no longer wanted: its pending delay and its back-off (a key already queued stays queued). */
  drop(key: string): void {
    this.#cancelDelay(key);
    this.#failures.delete(key);
  }

  #cancelDelay(key: string): void {
    const delayed = this.#delayed.get(key);
    if (!delayed) return;
    delayed.cancel.abort();
    this.#delayed.delete(key);
  }

  /** The next key to process; undefined once the queue shuts down. Call `done(key)` after processing. */
  get(): Promise<string | undefined> {
    const key = this.#queue.shift();
    if (key !== undefined) {
      this.#queued.delete(key);
      this.#processing.add(key);
      return Promise.resolve(key);
    }
    if (this.#shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  done(key: string): void {
    this.#processing.delete(key);
    if (this.#dirty.delete(key)) this.add(key);
    for (const listener of [...this.#doneListeners]) listener(key);
  }

  /** Calls `listener` each time a key's processing ended (after `done`); answers the function that removes it. */
  onDone(listener: (key: string) => void): () => void {
    this.#doneListeners.add(listener);
    return () => this.#doneListeners.delete(listener);
  }

  /**
   * Hands each key to `handle`, at most `concurrency` keys at a time, until the queue shuts down; resolves once
   * the handlers under way have finished (a drain). `handle` must not reject; `done` is called for it.
   */
  async process(handle: (key: string) => Promise<void>, concurrency = Number.POSITIVE_INFINITY): Promise<void> {
    const running = new Set<Promise<void>>();
    const limit = Math.max(1, concurrency);
    for (;;) {
      // Take a key only with a free slot, so a key waiting for one is still deduplicated in the queue.
      while (running.size >= limit) await Promise.race(running);
      const key = await this.get();
      if (key === undefined) break;
      const run: Promise<void> = handle(key)
        .catch(() => {})
        .finally(() => {
          running.delete(run);
          this.done(key);
        });
      running.add(run);
    }
    await Promise.all(running);
  }

  /** Stops handing out keys: waiting `get`s resolve undefined, delayed and queued keys are dropped. */
  shutDown(): void {
    this.#shuttingDown = true;
    for (const { cancel } of this.#delayed.values()) cancel.abort();
    this.#delayed.clear();
    this.#queue.length = 0;
    this.#queued.clear();
    for (const waiter of this.#waiters.splice(0)) waiter(undefined);
  }
}
