/**
 * Waiting on a run's lifecycle steps (`runs.lifecycle`, told by the run engine after each change commits:
 * created, claimed, started, queued, blocked, finished) instead of polling the run. The steps come from the
 * process's own bus (a TestServer's `server.ctx.bus`); a wait given `current` also reads the run again on the
 * bus messages that cross processes, for a run another server process moves.
 */
import { lifecycleStep } from '../../src/engine/announce.ts';
import type { Bus } from '../../src/kernel/bus.ts';
import {
  RUN_CHANGED_TOPIC,
  RUN_EVENTS_TOPIC,
  RUN_LIFECYCLE_TOPIC,
  RUNS_QUEUED_TOPIC,
} from '../../src/kernel/topics.ts';
import type { RunLifecycleEvent } from '../../src/kernel/topics.ts';

export type { RunLifecycleEvent };

export interface WaitForRunOptions {
  /**
   * Reads the run's state now. Called once the wait listens, so a step taken before the wait began is not
   * missed: when the state it answers satisfies the predicate, the wait ends at once. Called again on each
   * `runs.changed` or `runs.events` message naming the run: those cross processes (LISTEN/NOTIFY on
   * PostgreSQL), so a run moved by another server process is seen too.
   */
  current?: () => Promise<string | undefined>;
  /** A safety net for a step that never comes (the test then fails saying what it waited for). */
  timeoutMs?: number;
}

/** A predicate: the step left the run in one of `states`. */
export const inState =
  (...states: string[]) =>
  (e: RunLifecycleEvent): boolean =>
    states.includes(e.state);

/** Resolves with the first lifecycle step of run `runId` that satisfies `predicate`. */
export function waitForRun(
  bus: Bus,
  runId: string,
  predicate: (e: RunLifecycleEvent) => boolean,
  options: WaitForRunOptions = {},
): Promise<RunLifecycleEvent> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  return new Promise<RunLifecycleEvent>((resolve, reject) => {
    let done = false;
    const wire: (() => void)[] = [];
    // reads of the run under way: the wait ends after them, so that none is left running against a server the
    // test closes next (a request answered while the server closes used to keep it open for its keep-alive)
    const reading = new Set<Promise<unknown>>();
    let settled = false;
    const settle = (err: Error | undefined, event?: RunLifecycleEvent) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(event!);
    };
    const finish = (err: Error | undefined, event?: RunLifecycleEvent) => {
      if (done) return;
      done = true;
      unsubscribe();
      for (const u of wire) u();
      if (err) settle(err);
      // (the timeout still fails a read that never answers)
      else void Promise.allSettled([...reading]).then(() => settle(undefined, event));
    };
    const unsubscribe = bus.subscribe(RUN_LIFECYCLE_TOPIC, (e) => {
      if (e.run_id === runId && predicate(e)) finish(undefined, e);
    });
    const timer = setTimeout(() => {
      const err = new Error(
        `timed out after ${timeoutMs} ms waiting for ${done ? 'a read' : 'a lifecycle step'} of run ${runId}`,
      );
      finish(err);
      settle(err);
    }, timeoutMs);
    const { current } = options;
    if (current) {
      const check = () => {
        if (done) return;
        const read = current().then(
          (state) => {
            if (state === undefined) return;
            const now: RunLifecycleEvent = { run_id: runId, event: lifecycleStep(state), state };
            if (predicate(now)) finish(undefined, now);
          },
          (err: unknown) => finish(err instanceof Error ? err : new Error(String(err))),
        );
        reading.add(read);
        void read.finally(() => reading.delete(read));
      };
      wire.push(
        bus.subscribe(RUN_CHANGED_TOPIC, (data) => {
          if (data?.run_id === runId) check();
        }),
        bus.subscribe(RUN_EVENTS_TOPIC, (data) => {
          if (data && ('run_ids' in data ? data.run_ids?.includes(runId) : data.run_id === runId)) check();
        }),
      );
      check();
    }
  });
}

/**
 * Resolves with what `find` answers once it answers something: `find` is asked now and after each run the
 * engine tells created (e.g. "the factory's first run"), or another process announces queued, never on a timer.
 */
export function waitForCreatedRun<T>(
  bus: Bus,
  find: () => Promise<T | undefined>,
  options: { timeoutMs?: number; what?: string } = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  return new Promise<T>((resolve, reject) => {
    let done = false;
    let looking: Promise<void> = Promise.resolve();
    const finish = (err: Error | undefined, value?: T) => {
      if (done) return;
      done = true;
      unsubscribe();
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(value as T);
    };
    // one look at a time, in order: a run created during a look is looked for again after it
    const look = () => {
      looking = looking.then(async () => {
        if (done) return;
        try {
          const found = await find();
          if (found !== undefined) finish(undefined, found);
        } catch (err) {
          finish(err instanceof Error ? err : new Error(String(err)));
        }
      });
    };
    const unsubscribers = [
      bus.subscribe(RUN_LIFECYCLE_TOPIC, (e) => {
        if (e.event === 'created') look();
      }),
      // the hint of new runs crosses processes (a run another server process created)
      bus.subscribe(RUNS_QUEUED_TOPIC, () => look()),
    ];
    const unsubscribe = () => {
      for (const u of unsubscribers) u();
    };
    const timer = setTimeout(
      () => finish(new Error(`timed out after ${timeoutMs} ms waiting for ${options.what ?? 'a run to be created'}`)),
      timeoutMs,
    );
    look();
  });
}
