import { describe, expect, it } from 'vitest';
import { CoalescedPass } from '../../src/kernel/coalesced-pass.ts';

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

describe('a coalesced pass', () => {
  it('runs one pass at a time, and one more after it however many requests came meanwhile', async () => {
    const gates = [gate(), gate()];
    let started = 0;
    const passes = new CoalescedPass(async () => {
      const mine = gates[started++]!;
      await mine.promise;
    });
    passes.request();
    expect(started).toBe(1);
    passes.request();
    passes.request();
    passes.request();
    expect(started).toBe(1);
    gates[0]!.open();
    await new Promise((r) => setImmediate(r));
    expect(started).toBe(2);
    gates[1]!.open();
    await passes.idle();
    expect(started).toBe(2);
  });

  it('starts no pass, first or repeated, once its owner says it cannot run', async () => {
    let stopped = false;
    const first = gate();
    let started = 0;
    const passes = new CoalescedPass(
      async () => {
        started++;
        await first.promise;
      },
      () => !stopped,
    );
    passes.request();
    passes.request(); // asks for a repeat
    stopped = true;
    first.open();
    await passes.idle();
    passes.request();
    await passes.idle();
    expect(started).toBe(1);
  });

  it('is idle at once when nothing runs', async () => {
    const passes = new CoalescedPass(async () => {});
    await expect(passes.idle()).resolves.toBeUndefined();
  });
});
