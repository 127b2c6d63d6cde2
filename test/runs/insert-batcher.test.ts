import { RUNS_QUEUED_TOPIC } from '../../src/kernel/topics.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertTeam } from '../../src/identity/sql.ts';
import { RunInsertBatcher } from '../../src/engine/insert-batcher.ts';
import { prepareQueuedRun, RunService } from '../../src/runs/service.ts';
import { Bus } from '../../src/kernel/bus.ts';
import type { Db } from '../../src/kernel/db.ts';
import { openPostgres } from '../../src/store/pg.ts';
import { newId } from '../../src/kernel/ids.ts';
import { createTestDatabase, ENGINES } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';
import type { CreatedRun } from '../../src/engine/engine.ts';
import { whenTold } from '../support/signals.ts';

describe.each(ENGINES)('group commit of run creation on %s', (engine) => {
  let database: TestDatabase;
  let teamId: string;
  beforeAll(async () => {
    database = await createTestDatabase(engine);
    teamId = (await insertTeam(database.db, newId('team'), 'batch')).id;
  });
  afterAll(async () => {
    await database?.close();
  });

  const prepare = (prompt: string, team = teamId) =>
    prepareQueuedRun(database.db, {
      teamId: team,
      prompt,
      source: 'API',
      creator: null,
      config: { name: 'b', worker_host: prompt === 'p3' ? 'box' : undefined },
    });

  it('writes concurrent creations together, each answered with its own run, and announces them once per batch', async () => {
    const announced: CreatedRun[][] = [];
    const batcher = new RunInsertBatcher(database.db, {
      notifications: () => undefined,
      inserted: (runs) => announced.push(runs),
    });
    const rows = await Promise.all(Array.from({ length: 40 }, (_, i) => prepare(`p${i}`)));
    const created = await Promise.all(rows.map((r) => batcher.insert(r)));
    expect(created.map((c) => c.id)).toEqual(rows.map((r) => r.id));
    expect(created.every((c) => c.state === 'QUEUED')).toBe(true);
    expect(created[3]!.worker_host).toBe('box');
    expect(announced.flat().length).toBe(40);
    expect(announced.length).toBeLessThan(40);
    const stored = await database.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM runs WHERE id = ANY($1::text[])',
      [rows.map((r) => r.id)],
    );
    expect(stored.rows[0]!.n).toBe(40);
  });

  it('fails only the bad row of a batch', async () => {
    const batcher = new RunInsertBatcher(
      database.db,
      { notifications: () => undefined, inserted: () => {} },
      { maxInFlight: 1 },
    );
    const good = await Promise.all(Array.from({ length: 5 }, (_, i) => prepare(`good${i}`)));
    const bad = await prepare('bad', 'team_does_not_exist');
    const results = await Promise.allSettled(
      [...good.slice(0, 2), bad, ...good.slice(2)].map((r) => batcher.insert(r)),
    );
    expect(results.map((r) => r.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
      'fulfilled',
    ]);
  });
});

describe('run creation tells the other processes on postgres', () => {
  const engine = ENGINES.find((e) => e === 'postgres');
  let database: TestDatabase;
  let other: Db;
  let teamId: string;
  beforeAll(async () => {
    if (!engine) return;
    database = await createTestDatabase(engine);
    other = await openPostgres({ connectionString: database.url! });
    teamId = (await insertTeam(database.db, newId('team'), 'notify')).id;
  });
  afterAll(async () => {
    await other?.close();
    await database?.close();
  });

  it.skipIf(!engine)(
    'one hint per worker host reaches another process, none for a run that was not created',
    async () => {
      const bus = new Bus(database.db);
      const otherBus = new Bus(other);
      await otherBus.start();
      const heard: { run_id: string; worker_host: string | null }[] = [];
      otherBus.subscribe(RUNS_QUEUED_TOPIC, (data) =>
        heard.push(data as { run_id: string; worker_host: string | null }),
      );
      const heardHere: unknown[] = [];
      bus.subscribe(RUNS_QUEUED_TOPIC, (data) => heardHere.push(data));
      const runs = new RunService(database.db, bus);
      const create = (prompt: string, workerHost?: string, team = teamId) =>
        runs.create({
          teamId: team,
          prompt,
          source: 'API',
          creator: null,
          config: workerHost ? { worker_host: workerHost } : {},
        });

      const created = await Promise.all([create('a'), create('b', 'box'), create('c'), create('d', 'box')]);
      await whenTold(otherBus, [RUNS_QUEUED_TOPIC], () => heard.length >= 2, { what: 'two hints on the other bus' });
      expect(new Set(heard.map((h) => h.worker_host))).toEqual(new Set([null, 'box']));
      expect(heard.every((h) => created.some((c) => c.run.id === h.run_id))).toBe(true);
      expect(heardHere.length).toBe(heard.length);

      heard.length = 0;
      await expect(create('e', 'lost', 'team_does_not_exist')).rejects.toThrow();
      await create('f', 'after');
      await whenTold(otherBus, [RUNS_QUEUED_TOPIC], () => heard.some((h) => h.worker_host === 'after'), {
        what: 'the hint of the run created after the failed one',
      });
      expect(heard.map((h) => h.worker_host)).not.toContain('lost');
      await otherBus.stop();
    },
  );
});
