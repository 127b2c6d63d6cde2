/** Timers the queue uses; tests inject fake ones. */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const SYSTEM_CLOCK: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref();
    return t;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface WorkQueueOptions {
  /** First retry delay of a failing key; doubles per failure up to `maxDelayMs`. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Overall retry rate (token bucket): retries per second and burst. */
  retriesPerSecond?: number;
  burst?: number;
  clock?: Clock;
}

/**
 * A work queue keyed by object (namespace/name), in the manner of client-go's rate-limited queue:
 * - a key waits in the queue at most once, however often it is added;
 * - a key is never handed to two workers at once: added while in progress, it is queued again when done;
 * - `addAfter` delays a key (the earliest pending delay wins); `addRateLimited` delays it by its own
 *   exponential backoff and an overall token bucket, until `forget` resets it.
 */
export class WorkQueue {
  readonly #queue: string[] = [];
  readonly #queued = new Set<string>();
  readonly #processing = new Set<string>();
  readonly #dirty = new Set<string>();
  readonly #delayed = new Map<string, { at: number; handle: unknown }>();
  readonly #failures = new Map<string, number>();
  readonly #waiters: ((key: string | undefined) => void)[] = [];
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
    this.#clock = options.clock ?? SYSTEM_CLOCK;
    this.#tokens = this.#burst;
    this.#tokensAt = this.#clock.now();
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
    const delayed = this.#delayed.get(key);
    if (delayed) {
      this.#clock.clearTimeout(delayed.handle);
      this.#delayed.delete(key);
    }
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
    const at = this.#clock.now() + delayMs;
    const existing = this.#delayed.get(key);
    if (existing && existing.at <= at) return;
    if (existing) this.#clock.clearTimeout(existing.handle);
    const handle = this.#clock.setTimeout(() => {
      if (this.#delayed.get(key)?.handle !== handle) return;
      this.#delayed.delete(key);
      this.add(key);
    }, delayMs);
    this.#delayed.set(key, { at, handle });
  }

  /** Queues the key again after its backoff (per key, doubling) or the overall rate limit, whichever is longer. */
  addRateLimited(key: string): number {
    const failures = this.#failures.get(key) ?? 0;
    this.#failures.set(key, failures + 1);
    const backoff = Math.min(this.#baseDelayMs * 2 ** failures, this.#maxDelayMs);
    const delay = Math.max(backoff, this.#bucketDelay());
    this.addAfter(key, delay);
    return delay;
  }

  #bucketDelay(): number {
    const now = this.#clock.now();
    this.#tokens = Math.min(this.#burst, this.#tokens + ((now - this.#tokensAt) / 1000) * this.#rate);
    this.#tokensAt = now;
    this.#tokens -= 1;
    return this.#tokens >= 0 ? 0 : Math.ceil((-this.#tokens / this.#rate) * 1000);
  }

  /** How many times in a row the key failed. */
  failures(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  forget(key: string): void {
    this.#failures.delete(key);
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
  }

  /** Stops handing out keys: waiting `get`s resolve undefined, delayed keys are dropped. */
  shutDown(): void {
    this.#shuttingDown = true;
    for (const { handle } of this.#delayed.values()) this.#clock.clearTimeout(handle);
    this.#delayed.clear();
    this.#queue.length = 0;
    this.#queued.clear();
    for (const waiter of this.#waiters.splice(0)) waiter(undefined);
  }
}
