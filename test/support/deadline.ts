/**
 * Steps of a test under a deadline shorter than the test's timeout (30 s, vitest.config.ts): a step that hangs
 * fails the test saying what it waited for, instead of a bare "Test timed out" that names nothing.
 */

/** `promise`, or a failure naming `what` once `ms` have passed. */
export function within<T>(what: string, promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** The time a test's steps share: each step gets what is left (at least `minMs`). */
export class Deadline {
  readonly #end: number;

  /** Ends `ms` from now (default 22 s: a test's 30 s, less a server's close after a failed step). */
  constructor(ms = 22_000) {
    this.#end = Date.now() + ms;
  }

  remaining(minMs = 1): number {
    return Math.max(minMs, this.#end - Date.now());
  }

  /** `promise`, or a failure naming `what` once the deadline has passed. */
  step<T>(what: string, promise: Promise<T>): Promise<T> {
    return within(what, promise, this.remaining());
  }
}

/** How long a test server has to stop in a test's `finally` (it usually takes well under a second). */
export const CLOSE_WITHIN_MS = 6_000;

/** Closes a test server, or fails saying it did not stop. */
export function closeWithin(server: { close(): Promise<void> }, ms = CLOSE_WITHIN_MS): Promise<void> {
  return within('the test server to stop', server.close(), ms);
}
