/** Time for the scheduler and the work queue, injectable so that tests advance minutes without waiting for them. */
export interface Clock {
  now(): Date;
  /** Resolves once `ms` of this clock's time have passed, or at once when `signal` aborts. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => new Date(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      if (signal.aborted) return resolve();
      // A sleep keeps no process alive on its own: what waits on it (a server, a loop) does.
      const timer = setTimeout(done, Math.max(0, ms));
      timer.unref();
      function done(): void {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done, { once: true });
    }),
};

/** A clock that moves only when told to (tests). Sleepers wake when the time they wait for is reached. */
export class ManualClock implements Clock {
  #now: number;
  readonly #sleepers = new Set<{ until: number; wake: () => void }>();

  constructor(start: Date | string = '2030-01-01T00:00:00.000Z') {
    this.#now = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.#now);
  }

  sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted || ms <= 0) return resolve();
      const sleeper = {
        until: this.#now + ms,
        wake: () => {
          this.#sleepers.delete(sleeper);
          signal.removeEventListener('abort', sleeper.wake);
          resolve();
        },
      };
      this.#sleepers.add(sleeper);
      signal.addEventListener('abort', sleeper.wake, { once: true });
    });
  }

  advance(ms: number): void {
    this.set(new Date(this.#now + ms));
  }

  set(date: Date | string): void {
    this.#now = new Date(date).getTime();
    for (const sleeper of [...this.#sleepers]) if (sleeper.until <= this.#now) sleeper.wake();
  }
}
