import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Bus } from '../../src/kernel/bus.ts';
import { DrainLoop } from '../../src/kernel/drain-loop.ts';
import { INTEGRATION_JOBS_TOPIC } from '../../src/kernel/topics.ts';
import { createTestDatabase } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';
import type { DrainLoopOptions } from '../../src/kernel/drain-loop.ts';

/** A drain loop whose drain is the test's. */
class TestLoop extends DrainLoop {
  readonly #drain: (loop: TestLoop) => Promise<void>;
  constructor(options: DrainLoopOptions, drain: (loop: TestLoop) => Promise<void>) {
    super(options);
    this.#drain = drain;
  }
  protected drain(): Promise<void> {
    return this.#drain(this);
  }
}

describe('a drain loop', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase('pglite');
  });
  afterAll(() => database.close());

  it('drains at start, on each announcement and each poll interval, and not after stop', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const bus = new Bus(database.db);
      let drains = 0;
      const loop = new TestLoop({ bus, topic: INTEGRATION_JOBS_TOPIC, pollIntervalMs: 1_000 }, async () => {
        drains++;
      });
      loop.start();
      await loop.idle();
      expect(drains).toBe(1);

      await bus.publish(INTEGRATION_JOBS_TOPIC, null);
      await loop.idle();
      expect(drains).toBe(2);

      vi.advanceTimersByTime(1_000);
      await loop.idle();
      expect(drains).toBe(3);

      await loop.stop();
      expect(loop.stopped).toBe(true);
      await bus.publish(INTEGRATION_JOBS_TOPIC, null);
      vi.advanceTimersByTime(5_000);
      loop.kick();
      await loop.idle();
      expect(drains).toBe(3);
    } finally {
      vi.useRealTimers();
    }
  });

  it('lets stop wait for the drain under way, which sees the loop stopped', async () => {
    const bus = new Bus(database.db);
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const seen: boolean[] = [];
    const loop = new TestLoop({ bus, topic: INTEGRATION_JOBS_TOPIC, pollIntervalMs: 60_000 }, async (self) => {
      await held;
      seen.push(self.stopped);
    });
    loop.start();
    let stopped = false;
    const stopping = loop.stop().then(() => {
      stopped = true;
    });
    await Promise.resolve();
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(seen).toEqual([true]);
  });
});
