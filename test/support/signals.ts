/**
 * Waiting for something to happen without a timer: `whenTold` looks again each time the product says on its bus
 * that something changed; `outputMatches` waits for a child process to print a line. `pollUntil` is the one poll
 * left, for what tells nothing (another OS process's life, a file an agent writes in its sandbox, a Kubernetes
 * API server's objects): every use names what it waits for.
 */
import type { Readable } from 'node:stream';
import type { Bus } from '../../src/kernel/bus.ts';
import type { LoopEvent } from '../../src/kernel/loop.ts';
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
 * Asks `check` now and each time `listen` pokes (a callback of the code under test, an event), one look at a time
 * (pokes during a look bring one more), until it answers a value; `listen` may also end the wait with an error,
 * and answers the function that stops listening.
 */
export function askWhenPoked<T>(
  listen: (poke: () => void, fail: (err: Error) => void) => () => void,
  check: Check<T>,
  options: WaitOptions,
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  return new Promise<T>((resolve, reject) => {
    let done = false;
    let looking = false;
    let again = false;
    const finish = (err: Error | undefined, value?: T) => {
      if (done) return;
      done = true;
      stop();
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
    const stop = listen(
      () => void look(),
      (err) => finish(err),
    );
    const timer = setTimeout(
      () => finish(new Error(`timed out after ${timeoutMs} ms waiting for ${options.what}`)),
      timeoutMs,
    );
    void look();
  });
}

/**
 * Resolves with what `check` answers once it answers a value: `check` is asked now and again after each message
 * on one of `topics` on one of the buses, never on a timer. A message from another process arrives through
 * LISTEN/NOTIFY on PostgreSQL; on PGlite, servers in one process each have their own bus, so pass the bus of
 * every server that may do the awaited thing. A check that throws ends the wait with its error.
 */
export function whenTold<T>(
  bus: Bus | readonly Bus[],
  topics: readonly Topic[],
  check: Check<T>,
  options: WaitOptions,
): Promise<T> {
  const buses: readonly Bus[] = Array.isArray(bus) ? bus : [bus as Bus];
  return askWhenPoked(
    (poke) => {
      const offs = buses.flatMap((b) => topics.map((topic) => b.subscribe(topic, poke)));
      return () => {
        for (const off of offs) off();
      };
    },
    check,
    options,
  );
}

/** A stand-in of a provider's API (test/support/github-api.ts, chat-apis.ts): it tells each call it answered. */
export interface CalledStandIn {
  onCall(listener: () => void): () => void;
}

/** Resolves with what `check` answers once it answers a value: asked now and after each call `standIn` answered. */
export function afterCalls<T>(standIn: CalledStandIn, check: Check<T>, options: WaitOptions): Promise<T> {
  return askWhenPoked((poke) => standIn.onCall(poke), check, options);
}

/** A background loop of the product (src/kernel/loop.ts): it tells each pass that ended. */
export interface PassingLoop {
  on(listener: (event: LoopEvent) => void): () => void;
}

/**
 * Resolves with what `check` answers once it answers a value: asked now and after each pass of `loop` (e.g. the
 * scoring runner's scan, the outbox evaluator's drain), never on a timer. For what a loop does that nothing else
 * tells; the loop's own triggers (its topics, its interval) decide when the passes come.
 */
export function afterPasses<T>(loop: PassingLoop, check: Check<T>, options: WaitOptions): Promise<T> {
  return askWhenPoked(
    (poke, fail) =>
      loop.on((e) => {
        if (e.event === 'stopped') fail(new Error(`the loop stopped before ${options.what}`));
        else poke();
      }),
    check,
    options,
  );
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
