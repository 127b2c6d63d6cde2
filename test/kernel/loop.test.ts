/**
 * The kernel's loop primitive: a pass on each trigger (timer, bus topic, kick), one at a time with the triggers
 * of a pass coalesced into one more, a delayed topic trigger, a clean stop, and the lifecycle events tests wait
 * on; and the serial queue.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Bus } from '../../src/kernel/bus.ts';
import { Loop, SerialQueue } from '../../src/kernel/loop.ts';
import { INTEGRATION_JOBS_TOPIC, RUNS_QUEUED_TOPIC } from '../../src/kernel/topics.ts';
import { createTestDatabase } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';

describe('a loop', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase('pglite');
  });
  afterAll(() => database.close());

  it('passes at start, on its topics and its timer, and not after stop', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const bus = new Bus(database.db);
      let passes = 0;
      const loop = new Loop({
        name: 'test',
        everyMs: 1_000,
        topics: { bus, topics: [INTEGRATION_JOBS_TOPIC] },
        pass: () => {
          passes++;
        },
      }).start();
      await loop.idle();
      expect(passes).toBe(1);
      const next = loop.nextPass();
      await bus.publish(INTEGRATION_JOBS_TOPIC, null);
      await next;
      expect(passes).toBe(2);
      vi.advanceTimersByTime(1_000);
      await loop.idle();
      expect(passes).toBe(3);
      await loop.stop();
      await bus.publish(INTEGRATION_JOBS_TOPIC, null);
      vi.advanceTimersByTime(5_000);
      loop.kick();
      await loop.idle();
      expect(passes).toBe(3);
    } finally {
      vi.useRealTimers();
    }
  });

  it('coalesces the triggers of a pass into one more, and stop waits for the pass under way', async () => {
    let release: () => void = () => {};
    let passes = 0;
    let ended = 0;
    let secondStarted!: () => void;
    const second = new Promise<void>((r) => (secondStarted = r));
    const loop = new Loop({
      name: 'slow',
      atStart: false,
      pass: async () => {
        passes++;
        if (passes === 2) secondStarted();
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        ended++;
      },
    }).start();
    loop.kick();
    for (let i = 0; i < 10; i++) loop.kick();
    expect(passes).toBe(1);
    release();
    await second;
    expect(passes).toBe(2);
    const stopped = loop.stop();
    let done = false;
    void stopped.then(() => {
      done = true;
    });
    await Promise.resolve();
    expect(done).toBe(false);
    release();
    await stopped;
    expect([passes, ended]).toEqual([2, 2]);
  });

  it('a delayed topic trigger turns a burst of messages into one pass; a failed pass goes to onError', async () => {
    const bus = new Bus(database.db);
    const errors: unknown[] = [];
    let passes = 0;
    const loop = new Loop({
      name: 'burst',
      atStart: false,
      topics: { bus, topics: [RUNS_QUEUED_TOPIC], delayMs: 20, when: (_t, data) => data !== null },
      pass: () => {
        passes++;
        throw new Error('boom');
      },
      onError: (err, name) => errors.push([name, (err as Error).message]),
    }).start();
    const events: string[] = [];
    loop.on((e) => events.push(e.event));
    const next = loop.nextPass();
    await bus.publish(RUNS_QUEUED_TOPIC, { run_id: null, worker_host: null });
    for (let i = 0; i < 20; i++) await bus.publish(RUNS_QUEUED_TOPIC, { run_id: `r${i}`, worker_host: null });
    await next;
    expect(passes).toBe(1);
    expect(errors).toEqual([['burst', 'boom']]);
    await loop.stop();
    expect(events).toEqual(['pass', 'stopped']);
  });
});

describe('a serial queue', () => {
  it('runs tasks one after another in order; a failure does not stop the next; settled waits for all', async () => {
    const queue = new SerialQueue();
    const order: string[] = [];
    const a = queue.run(async () => {
      await new Promise((r) => setTimeout(r, 5));
      order.push('a');
    });
    const b = queue.run(() => {
      order.push('b');
      throw new Error('b failed');
    });
    const c = queue.run(() => {
      order.push('c');
      return 3;
    });
    await queue.settled();
    expect(order).toEqual(['a', 'b', 'c']);
    await a;
    await expect(b).rejects.toThrow('b failed');
    expect(await c).toBe(3);
  });
});
