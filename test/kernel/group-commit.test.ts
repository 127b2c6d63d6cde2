import { describe, expect, it } from 'vitest';
import { Batcher, GroupCommit } from '../../src/kernel/group-commit.ts';
import type { GroupItem } from '../../src/kernel/group-commit.ts';

interface Item extends GroupItem {
  n: number;
  resolve(value: string): void;
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** A writer whose statements end when the test says so; it records each group and answers its items. */
function controlledWriter(options: { releaseEarly?: boolean } = {}) {
  const groups: number[][] = [];
  const statements: ReturnType<typeof deferred>[] = [];
  const events: string[] = [];
  const waiting: { count: number; resolve: () => void }[] = [];
  /** Resolves once `count` groups have reached the writer (the writer's own call says so, no timer). */
  const started = (count: number): Promise<void> =>
    groups.length >= count ? Promise.resolve() : new Promise((resolve) => waiting.push({ count, resolve }));
  const write = async (group: Item[], release: () => void) => {
    groups.push(group.map((i) => i.n));
    for (const w of waiting.filter((x) => groups.length >= x.count)) {
      waiting.splice(waiting.indexOf(w), 1);
      w.resolve();
    }
    const statement = deferred();
    statements.push(statement);
    await statement.promise;
    if (options.releaseEarly) release();
    events.push(`answer ${group.map((i) => i.n).join(',')}`);
    for (const item of group) item.resolve(`ok ${item.n}`);
  };
  return { groups, statements, events, write, started };
}

function add(core: GroupCommit<Item>, n: number): Promise<string> {
  return new Promise((resolve, reject) => core.add({ n, resolve, reject }));
}

describe('group commit', () => {
  it('writes what arrives in one turn as one group, and what arrives meanwhile as the next', async () => {
    const writer = controlledWriter();
    const core = new GroupCommit<Item>(writer.write);
    const first = [1, 2, 3].map((n) => add(core, n));
    await writer.started(1);
    const second = [4, 5].map((n) => add(core, n));
    await new Promise((r) => setImmediate(r));
    expect(writer.groups).toEqual([[1, 2, 3]]); // one group in flight by default
    writer.statements[0]!.resolve();
    expect(await Promise.all(first)).toEqual(['ok 1', 'ok 2', 'ok 3']);
    await writer.started(2);
    expect(writer.groups[1]).toEqual([4, 5]);
    writer.statements[1]!.resolve();
    expect(await Promise.all(second)).toEqual(['ok 4', 'ok 5']);
  });

  it('hands the next group over before the finished one is answered when the writer releases early', async () => {
    const writer = controlledWriter({ releaseEarly: true });
    const core = new GroupCommit<Item>((group, release) => {
      writer.events.push(`write ${group.map((i) => i.n).join(',')}`);
      return writer.write(group, release);
    });
    const first = add(core, 1);
    await writer.started(1);
    const second = add(core, 2);
    await new Promise((r) => setImmediate(r));
    writer.statements[0]!.resolve();
    await first;
    expect(writer.events).toEqual(['write 1', 'write 2', 'answer 1']);
    writer.statements[1]!.resolve();
    await second;
  });

  it('takes at most maxGroup items, read as each group forms, and keeps maxInFlight groups in flight', async () => {
    const writer = controlledWriter();
    let limit = 2;
    const core = new GroupCommit<Item>(writer.write, { maxGroup: () => limit, maxInFlight: 2 });
    const all = [1, 2, 3, 4, 5].map((n) => add(core, n));
    await writer.started(2);
    expect(writer.groups).toEqual([
      [1, 2],
      [3, 4],
    ]);
    limit = 10;
    writer.statements[0]!.resolve();
    await writer.started(3);
    expect(writer.groups[2]).toEqual([5]);
    writer.statements[1]!.resolve();
    writer.statements[2]!.resolve();
    expect(await Promise.all(all)).toEqual(['ok 1', 'ok 2', 'ok 3', 'ok 4', 'ok 5']);
  });

  it('with overlap `full`, sends a second group while one is in flight only once a full group waits', async () => {
    const writer = controlledWriter();
    const core = new GroupCommit<Item>(writer.write, { maxGroup: 3, maxInFlight: 2, overlap: 'full' });
    const first = [1].map((n) => add(core, n));
    await writer.started(1);
    // two waiting, a group is three: they wait for the group in flight
    const second = [2, 3].map((n) => add(core, n));
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
    expect(writer.groups).toEqual([[1]]);
    // a full group waits: it goes beside the one in flight
    const third = [4, 5].map((n) => add(core, n));
    await writer.started(2);
    expect(writer.groups[1]).toEqual([2, 3, 4]);
    // while a group is in flight, what is left still waits for a full group ...
    writer.statements[0]!.resolve();
    await Promise.all(first);
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
    expect(writer.groups).toHaveLength(2);
    // ... and goes as soon as nothing is in flight
    writer.statements[1]!.resolve();
    await writer.started(3);
    expect(writer.groups[2]).toEqual([5]);
    writer.statements[2]!.resolve();
    expect(await Promise.all([...first, ...second, ...third])).toEqual(['ok 1', 'ok 2', 'ok 3', 'ok 4', 'ok 5']);
  });

  it('fails the items a failed write left waiting, and goes on with the next group', async () => {
    let calls = 0;
    const core = new GroupCommit<Item>(async (group) => {
      calls++;
      if (calls === 1) {
        group[0]!.resolve('settled before the failure');
        throw new Error('statement failed');
      }
      for (const item of group) item.resolve(`ok ${item.n}`);
    });
    const results = await Promise.allSettled([add(core, 1), add(core, 2)]);
    expect(results).toEqual([
      { status: 'fulfilled', value: 'settled before the failure' },
      { status: 'rejected', reason: new Error('statement failed') },
    ]);
    expect(await add(core, 3)).toBe('ok 3');
  });

  it('drains: resolves once everything handed over is written', async () => {
    const writer = controlledWriter();
    const core = new GroupCommit<Item>(writer.write);
    await core.drain();
    const pending = [add(core, 1), add(core, 2)];
    let drained = false;
    const drain = core.drain().then(() => {
      drained = true;
    });
    await writer.started(1);
    expect(drained).toBe(false);
    writer.statements[0]!.resolve();
    await drain;
    expect(drained).toBe(true);
    await Promise.all(pending);
  });
});

describe('Batcher, the plain case', () => {
  it('answers each item with its result and gathers per microtask turn when asked', async () => {
    const flushed: number[][] = [];
    const batcher = new Batcher<number, number>(
      async (items) => {
        flushed.push(items);
        return items.map((n) => n * 10);
      },
      { gather: 'microtasks' },
    );
    // The work that the answers of the first group hand over joins the second group together.
    const chained = await Promise.all(
      [1, 2].map(async (n) => {
        const first = await batcher.add(n);
        return batcher.add(first);
      }),
    );
    expect(chained).toEqual([100, 200]);
    expect(flushed).toEqual([
      [1, 2],
      [10, 20],
    ]);
  });

  it('gathers for the current turn with `turn`, only for queued microtasks with `microtasks`', async () => {
    const groupsOf = async (gather: 'turn' | 'microtasks') => {
      const flushed: number[][] = [];
      const batcher = new Batcher<number, number>(
        async (items) => {
          flushed.push(items);
          return items;
        },
        { gather },
      );
      const first = batcher.add(1);
      await Promise.resolve();
      await Promise.all([first, batcher.add(2)]);
      return flushed;
    };
    expect(await groupsOf('turn')).toEqual([[1, 2]]);
    expect(await groupsOf('microtasks')).toEqual([[1], [2]]);
  });

  it('fails every item of a failed flush', async () => {
    const batcher = new Batcher<number, number>(async () => {
      throw new Error('boom');
    });
    const results = await Promise.allSettled([batcher.add(1), batcher.add(2)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  });
});
