import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/kernel/clock.ts';
import { WorkQueue } from '../../src/kernel/work-queue.ts';

/** Lets every callback already due run (timers of the manual clock resolve promises). */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A handler whose calls finish only when the test says so. */
function gatedHandler() {
  const calls: string[] = [];
  const open = new Map<string, (() => void)[]>();
  let active = 0;
  let most = 0;
  return {
    calls,
    get active() {
      return active;
    },
    get most() {
      return most;
    },
    handle: (key: string) =>
      new Promise<void>((resolve) => {
        calls.push(key);
        active++;
        most = Math.max(most, active);
        open.set(key, [
          ...(open.get(key) ?? []),
          () => {
            active--;
            resolve();
          },
        ]);
      }),
    finish(key: string) {
      const finishers = open.get(key);
      const next = finishers?.shift();
      if (!next) throw new Error(`${key} is not running`);
      next();
    },
  };
}

describe('WorkQueue', () => {
  it('holds a key once however often it is added', async () => {
    const q = new WorkQueue({ clock: new ManualClock() });
    q.add('ns/a');
    q.add('ns/a');
    q.add('ns/b');
    expect(q.length).toBe(2);
    expect(await q.get()).toBe('ns/a');
    expect(await q.get()).toBe('ns/b');
  });

  it('never hands a key to two workers: added while in progress, it comes back after done', async () => {
    const q = new WorkQueue({ clock: new ManualClock() });
    q.add('k');
    expect(await q.get()).toBe('k');
    q.add('k');
    q.add('k');
    expect(q.length).toBe(0);
    q.done('k');
    expect(q.length).toBe(1);
  });

  it('delays keys; the earliest delay wins, and an add clears a pending delay', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ clock });
    q.addAfter('k', 1_000);
    q.addAfter('k', 5_000);
    expect(q.delayed).toBe(1);
    clock.advance(999);
    await settle();
    expect(q.length).toBe(0);
    clock.advance(1);
    await settle();
    expect(q.length).toBe(1);
    expect(q.delayed).toBe(0);
    q.addAfter('j', 1_000);
    q.add('j');
    expect(q.delayed).toBe(0);
    clock.advance(2_000);
    await settle();
    expect(q.length).toBe(2);
  });

  it('backs a failing key off exponentially up to the maximum, until it is forgotten', () => {
    const q = new WorkQueue({ clock: new ManualClock(), baseDelayMs: 1_000, maxDelayMs: 8_000 });
    expect([1, 2, 3, 4, 5].map(() => q.addRateLimited('k'))).toEqual([1_000, 2_000, 4_000, 8_000, 8_000]);
    expect(q.failures('k')).toBe(5);
    q.forget('k');
    expect(q.failures('k')).toBe(0);
    expect(q.addRateLimited('k')).toBe(1_000);
  });

  it('rate limits retries overall with a token bucket that refills with time', () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ clock, baseDelayMs: 1, retriesPerSecond: 10, burst: 2 });
    expect(q.addRateLimited('a')).toBe(1);
    expect(q.addRateLimited('b')).toBe(1);
    expect(q.addRateLimited('c')).toBe(100);
    clock.advance(1_000);
    expect(q.addRateLimited('d')).toBe(1);
  });

  it('drops a key no longer wanted: its delay and its back-off', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ clock, baseDelayMs: 1_000 });
    expect(q.addRateLimited('gone')).toBe(1_000);
    expect(q.addRateLimited('gone')).toBe(2_000);
    q.drop('gone');
    expect(q.delayed).toBe(0);
    expect(q.failures('gone')).toBe(0);
    clock.advance(60_000);
    await settle();
    expect(q.length).toBe(0);
  });

  it('answers undefined to waiting workers on shutdown and takes nothing more', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ clock });
    const waiting = q.get();
    q.addAfter('delayed', 1_000);
    q.shutDown();
    expect(await waiting).toBeUndefined();
    expect(q.shuttingDown).toBe(true);
    q.add('late');
    q.addAfter('later', 10);
    clock.advance(5_000);
    await settle();
    expect(q.length).toBe(0);
    expect(q.delayed).toBe(0);
    expect(await q.get()).toBeUndefined();
  });
});

describe('WorkQueue.process', () => {
  it('runs at most `concurrency` keys at once, and never one key twice at once', async () => {
    const q = new WorkQueue({ clock: new ManualClock() });
    const h = gatedHandler();
    const processing = q.process(h.handle, 2);
    for (const key of ['a', 'b', 'c', 'a']) q.add(key);
    await settle();
    expect(h.calls).toEqual(['a', 'b']);
    // `c` waits for a free slot in the queue, where adding it again still deduplicates.
    q.add('c');
    expect(q.length).toBe(1);
    h.finish('a');
    await settle();
    expect(h.calls).toEqual(['a', 'b', 'c']);
    expect(h.most).toBe(2);
    q.shutDown();
    h.finish('b');
    h.finish('c');
    await processing;
  });

  it('coalesces the adds of a running key into one more run after it', async () => {
    const q = new WorkQueue({ clock: new ManualClock() });
    const h = gatedHandler();
    const processing = q.process(h.handle);
    q.add('k');
    await settle();
    q.add('k');
    q.add('k');
    q.add('k');
    await settle();
    expect(h.calls).toEqual(['k']);
    h.finish('k');
    await settle();
    expect(h.calls).toEqual(['k', 'k']);
    h.finish('k');
    await settle();
    expect(h.calls).toEqual(['k', 'k']);
    q.shutDown();
    await processing;
  });

  it('runs different keys side by side without a limit by default', async () => {
    const q = new WorkQueue({ clock: new ManualClock() });
    const h = gatedHandler();
    const processing = q.process(h.handle);
    const keys = Array.from({ length: 50 }, (_, i) => `f${i}`);
    for (const key of keys) q.add(key);
    await settle();
    expect(h.active).toBe(50);
    q.shutDown();
    for (const key of keys) h.finish(key);
    await processing;
  });

  it('drains on shutdown: resolves only after the handlers under way finished', async () => {
    const q = new WorkQueue({ clock: new ManualClock() });
    const h = gatedHandler();
    let drained = false;
    const processing = q.process(h.handle, 1).then(() => {
      drained = true;
    });
    q.add('running');
    q.add('queued');
    await settle();
    q.shutDown();
    await settle();
    expect(drained).toBe(false);
    h.finish('running');
    await processing;
    expect(h.calls).toEqual(['running']);
  });

  it('hands a delayed key to the handler once its delay has passed on the clock', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ clock, baseDelayMs: 2_000 });
    const seen: string[] = [];
    const processing = q.process(async (key) => {
      seen.push(key);
    });
    q.addRateLimited('retry');
    clock.advance(1_999);
    await settle();
    expect(seen).toEqual([]);
    clock.advance(1);
    await settle();
    expect(seen).toEqual(['retry']);
    q.shutDown();
    await processing;
  });
});
