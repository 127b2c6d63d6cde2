/**
 * Waiting for something to happen without a timer: `whenTold` looks again each time the product says on its bus
 * that something changed; `outputMatches` waits for a child process to print a line. `pollUntil` is the one poll
 * left, for what tells nothing (another OS process's life, a file an agent writes in its sandbox, a Kubernetes
 * API server's objects): every use names what it waits for.
 */
import type { Readable } from 'node:stream';
import type { Bus } from '../../src/kernel/bus.ts';
import type { Topic } from '../../src/kernel/topics.ts';

/** What a check answers: a value ends the wait; undefined or false looks again at the next signal. */
export type Check<T> = () => Promise<T | undefined | false> | T | undefined | false;

export interface WaitOptions {
  /** Said in the error when the wait gives up. */
  what: string;
  /** A safety net for a signal that never comes. */
  timeoutMs?: number;
}

function errorOf(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/**
 * Resolves with what `check` answers once it answers a value: `check` is asked now and again after each message
 * on one of `topics` on one of the buses (one look at a time; messages during a look bring one more), never on a
 * timer. A message from another process arrives through LISTEN/NOTIFY on PostgreSQL; on PGlite, servers in one
 * process each have their own bus, so pass the bus of every server that may do the awaited thing. A check that throws ends the wait with its
 * error.
 */
export function whenTold<T>(
  bus: Bus | readonly Bus[],
  topics: readonly Topic[],
  check: Check<T>,
  options: WaitOptions,
): Promise<T> {
  const buses: readonly Bus[] = Array.isArray(bus) ? bus : [bus as Bus];
  const timeoutMs = options.timeoutMs ?? 20_000;
  return new Promise<T>((resolve, reject) => {
    let done = false;
    let looking = false;
    let again = false;
    const finish = (err: Error | undefined, value?: T) => {
      if (done) return;
      done = true;
      for (const u of unsubscribers) u();
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(value as T);
    };
    const look = async () => {
      if (looking) {
        again = true;
        return;
      }
      looking = true;
      try {
        do {
          again = false;
          if (done) return;
          const value = await check();
          if (value !== undefined && value !== false) return finish(undefined, value);
        } while (again);
      } catch (err) {
        finish(errorOf(err));
      } finally {
        looking = false;
      }
    };
    const unsubscribers = buses.flatMap((b) => topics.map((topic) => b.subscribe(topic, () => void look())));
    const timer = setTimeout(
      () => finish(new Error(`timed out after ${timeoutMs} ms waiting for ${options.what}`)),
      timeoutMs,
    );
    void look();
  });
}

/**
 * Resolves with the first match of `pattern` in what `stream` prints from now on, added to `sofar` (what it
 * printed already): a child process's line, never a timer. Rejects when the stream ends first.
 */
export function outputMatches(
  stream: Readable,
  pattern: RegExp,
  options: WaitOptions & { sofar?: () => string },
): Promise<RegExpExecArray> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  return new Promise<RegExpExecArray>((resolve, reject) => {
    let text = options.sofar?.() ?? '';
    const finish = (err: Error | undefined, match?: RegExpExecArray) => {
      stream.off('data', onData);
      stream.off('close', onClose);
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(match!);
    };
    const test = () => {
      const match = pattern.exec(text);
      if (match) finish(undefined, match);
      return match;
    };
    const onData = (chunk: Buffer | string) => {
      text += chunk.toString();
      test();
    };
    const onClose = () => finish(new Error(`the output ended before ${options.what}:\n${text}`));
    const timer = setTimeout(
      () => finish(new Error(`timed out after ${timeoutMs} ms waiting for ${options.what}:\n${text}`)),
      timeoutMs,
    );
    stream.on('data', onData);
    stream.once('close', onClose);
    test();
  });
}

/**
 * The one poll: asks `check` every `everyMs` until it answers a value. Only for what says nothing when it
 * happens (an OS process exiting, a file written inside an agent's sandbox, an object in a Kubernetes API
 * server); a timeout names `what` and the check's last error.
 */
export async function pollUntil<T>(check: Check<T>, options: WaitOptions & { everyMs?: number }): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
      last = undefined;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms polling for ${options.what}${last ? `: ${errorOf(last).message}` : ''}`,
      );
    await new Promise((r) => setTimeout(r, options.everyMs ?? 20));
  }
}
