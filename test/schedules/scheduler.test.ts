import { afterEach, describe, expect, it, vi } from 'vitest';
import { ManualClock, systemClock } from '../../src/kernel/clock.ts';
import { spawnAgentyard, serveEnv } from '../support/agentyard-process.ts';
import { createTestDatabase, ENGINES } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';
import { parseRoles } from '../../src/config.ts';
import { startTestServer } from '../support/server.ts';
import { runsOfSchedule, secondConnection, startScheduleServer, waitForRuns, whenScheduled } from './support.ts';
import type { ScheduleTestServer } from './support.ts';

interface FireRow {
  schedule_id: string;
  scheduled_for: Date;
  run_ids: string[];
  fired_by: string;
}

async function firesOf(s: ScheduleTestServer, scheduleIds: string[]): Promise<FireRow[]> {
  const res = await s.server.ctx.db.query<FireRow>(
    'SELECT schedule_id, scheduled_for, run_ids, fired_by FROM schedule_fires WHERE schedule_id = ANY($1::text[]) ORDER BY schedule_id, scheduled_for',
    [scheduleIds],
  );
  return res.rows;
}

describe.each(ENGINES)('scheduler on %s', (engine) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function database(): Promise<TestDatabase> {
    const db = await createTestDatabase(engine);
    cleanups.push(() => db.close());
    return db;
  }

  async function server(options: Parameters<typeof startScheduleServer>[1]): Promise<ScheduleTestServer> {
    const s = await startScheduleServer(engine, options);
    cleanups.push(() => s.close());
    return s;
  }

  it('after downtime fires a missed schedule once, then continues from now', async () => {
    const db = await database();
    const clock = new ManualClock('2030-04-01T00:00:30.000Z');
    const first = await server({ clock, database: db });
    const created = await first.api('POST', '/agent/schedules', {
      name: 'every ten minutes',
      cron_schedule: '*/10 * * * *',
      prompt: 'sweep',
    });
    expect(created.body.history.next_run).toBe('2030-04-01T00:10:00.000Z');
    await first.close();

    // Down from 00:00:30 to 01:03: the 00:10, 00:20, …, 01:00 slots pass with no scheduler running.
    clock.set('2030-04-01T01:03:00.000Z');
    const second = await server({ clock, database: db, adminKey: first.adminKey });
    const runs = await waitForRuns(second, created.body.id, 'the catch-up fire');
    await second.scheduler.tick();
    expect(await runsOfSchedule(second, created.body.id)).toHaveLength(1);
    expect(runs[0]).toMatchObject({ source: 'SCHEDULED_AGENT', prompt: 'sweep' });
    const after = await second.api('GET', `/agent/schedules/${created.body.id}`);
    expect(after.body.history).toEqual({ last_ran: '2030-04-01T01:03:00.000Z', next_run: '2030-04-01T01:10:00.000Z' });
    // The fire stands for the first slot it replaces.
    const fires = await firesOf(second, [created.body.id]);
    expect(fires.map((f) => f.scheduled_for.toISOString())).toEqual(['2030-04-01T00:10:00.000Z']);
    expect(fires[0]!.run_ids).toEqual([runs[0]!.run_id]);

    clock.set('2030-04-01T01:10:00.000Z');
    await whenScheduled(
      second,
      async () => (await runsOfSchedule(second, created.body.id)).length === 2,
      'the next regular fire',
    );
  });

  it('with two schedulers on one database, each fire creates exactly one run', async () => {
    const db = await database();
    const clock = new ManualClock('2030-05-01T00:00:10.000Z');
    const a = await server({ clock, database: db });
    const other = await secondConnection(db);
    cleanups.push(() => other.close());
    const b = await server({ clock, database: other, adminKey: a.adminKey });

    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const via = i % 2 ? a : b;
      const res = await via.api('POST', '/agent/schedules', {
        name: `minutely ${i}`,
        cron_schedule: '* * * * *',
        prompt: `job ${i}`,
      });
      expect(res.status).toBe(201);
      ids.push(res.body.id);
    }
    const total = async () =>
      (await Promise.all(ids.map((id) => runsOfSchedule(a, id)))).reduce((n, runs) => n + runs.length, 0);
    for (let minute = 1; minute <= 3; minute++) {
      clock.advance(60_000);
      await whenScheduled([a, b], async () => (await total()) >= ids.length * minute, `the fires of minute ${minute}`);
      // Both schedulers look again at the same time; nothing more fires.
      await Promise.all([a.scheduler.tick(), b.scheduler.tick()]);
      expect(await total()).toBe(ids.length * minute);
    }
    const fires = await firesOf(a, ids);
    expect(fires).toHaveLength(ids.length * 3);
    for (const id of ids) {
      const runs = await runsOfSchedule(b, id);
      expect(runs).toHaveLength(3);
      const fired = fires.filter((f) => f.schedule_id === id);
      expect(fired.map((f) => f.run_ids.length)).toEqual([1, 1, 1]);
      expect(new Set(fired.flatMap((f) => f.run_ids))).toEqual(new Set(runs.map((r) => r.run_id)));
    }
  });

  it('a due schedule held by another transaction fires once it is released, though the clock stands still', async () => {
    const db = await database();
    const clock = new ManualClock('2030-05-03T00:00:10.000Z');
    const s = await server({ clock, database: db });
    const created = await s.api('POST', '/agent/schedules', {
      name: 'minutely',
      cron_schedule: '* * * * *',
      prompt: 'p',
    });
    expect(created.status).toBe(201);

    // Another connection (on PostgreSQL; the same one on PGlite) holds the row as a schedule sync does.
    const other = await secondConnection(db);
    cleanups.push(() => other.close());
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let held!: () => void;
    const holding = new Promise<void>((r) => (held = r));
    const holder = other.db.transaction(async (tx) => {
      await tx.query('SELECT id FROM schedules WHERE id = $1 FOR UPDATE', [created.body.id]);
      held();
      await released;
      return (
        await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM schedule_fires WHERE schedule_id = $1', [
          created.body.id,
        ])
      ).rows[0]!.n;
    });
    await holding;
    // The scheduler's own loop, watched (not replaced): its ticks' answers say when one found the row held.
    const tick = s.scheduler.tick.bind(s.scheduler);
    let heldTick!: () => void;
    const foundHeld = new Promise<void>((r) => (heldTick = r));
    vi.spyOn(s.scheduler, 'tick').mockImplementation(async () => {
      const outcome = await tick();
      if (outcome.fired === 0) heldTick();
      return outcome;
    });
    clock.set('2030-05-03T00:01:00.000Z');
    // A tick that skipped the locked row and fired nothing: the loop now retries on real time. (PGlite is one
    // connection: there the loop waits behind the holder's transaction, wherever it is.)
    if (engine === 'postgres') await foundHeld;
    release();
    expect(await holder).toBe(0);
    await waitForRuns(s, created.body.id, 'the fire after the lock is released', 1);
  });

  it('fires nothing in a process without the scheduler role, and the API still works there', async () => {
    const db = await database();
    const clock = new ManualClock('2030-05-02T00:00:10.000Z');
    const apiOnly = await startTestServer(engine, {
      database: db,
      compose: { clock },
      config: { roles: parseRoles('api,ingress') },
    });
    cleanups.push(() => apiOnly.close());
    expect(apiOnly.server.services.scheduler).toBeUndefined();
    const created = await apiOnly.api('POST', '/agent/schedules', {
      name: 'minutely',
      cron_schedule: '* * * * *',
      prompt: 'p',
    });
    expect(created.status).toBe(201);
    expect(created.body.history.next_run).toBe('2030-05-02T00:01:00.000Z');
    clock.advance(120_000);
    expect(await runsOfSchedule(apiOnly, created.body.id)).toHaveLength(0);
    // A scheduler process started later picks the missed slot up (once).
    const scheduler = await server({ clock, database: db, adminKey: apiOnly.adminKey });
    await whenScheduled(
      [apiOnly, scheduler],
      async () => (await runsOfSchedule(apiOnly, created.body.id)).length === 1,
      'the fire by the scheduler process',
    );
    await scheduler.scheduler.tick();
    expect(await runsOfSchedule(apiOnly, created.body.id)).toHaveLength(1);
  });

  it.runIf(engine === 'postgres')(
    'with a second scheduler in another OS process, each fire creates exactly one run',
    async () => {
      const db = await database();
      const a = await server({ clock: systemClock, database: db });
      // `info` logs: the process says when it listens.
      const other = spawnAgentyard(
        ['serve', '--roles', 'scheduler', '--port', '0', '--host', '127.0.0.1'],
        serveEnv(db, { LOG_LEVEL: 'info' }),
      );
      cleanups.push(() => other.stop());
      await other.printed(/Agentyard listening/, 'the second process', 30_000);

      const ids: string[] = [];
      for (let i = 0; i < 6; i++) {
        const res = await a.api('POST', '/agent/schedules', {
          name: `every second ${i}`,
          cron_schedule: '@every 1s',
          prompt: `job ${i}`,
        });
        ids.push(res.body.id);
      }
      await whenScheduled(
        a,
        async () => {
          const fires = await firesOf(a, ids);
          return ids.every((id) => fires.filter((f) => f.schedule_id === id).length >= 3);
        },
        'three fires of every schedule',
        30_000,
      );
      // Pausing waits for a fire in progress (row lock), after which nothing fires.
      for (const id of ids) expect((await a.api('POST', `/agent/schedules/${id}/pause`)).status).toBe(200);

      const fires = await firesOf(a, ids);
      for (const id of ids) {
        const runs = await runsOfSchedule(a, id);
        const fired = fires.filter((f) => f.schedule_id === id);
        expect(runs.length).toBe(fired.length);
        expect(fired.every((f) => f.run_ids.length === 1)).toBe(true);
        expect(new Set(fired.flatMap((f) => f.run_ids))).toEqual(new Set(runs.map((r) => r.run_id)));
        expect(new Set(runs.map((r) => r.run_id)).size).toBe(runs.length);
      }
      const byProcess = new Map<string, number>();
      for (const f of fires) byProcess.set(f.fired_by, (byProcess.get(f.fired_by) ?? 0) + 1);
      console.log(`fires by process: ${JSON.stringify(Object.fromEntries(byProcess))}`);
    },
  );
});
