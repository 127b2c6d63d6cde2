import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import type { Logger } from '../../src/kernel/log.ts';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { insertTeam } from '../../src/identity/sql.ts';
import { createLogger } from '../../src/log.ts';
import { getRun } from '../../src/runs/sql.ts';
import type { Db } from '../../src/kernel/db.ts';
import {
  checkpointIfDue,
  createIndexFreeSpaceMaps,
  maintainTables,
  startTableMaintenance,
} from '../../src/store/maintenance.ts';
import { newId } from '../../src/kernel/ids.ts';
import { createTestDatabase, ENGINES } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import { askWhenPoked, outputMatches } from '../support/signals.ts';
import type { TestServer } from '../support/server.ts';

const pglite = ENGINES.includes('pglite');
const silentLog = createLogger('silent');

/** Activity counters of `runs`, flushed first (PostgreSQL reports them at most once a second otherwise). */
async function runsActivity(db: Db): Promise<{ dead: number; analyzed: boolean; vacuumed: boolean }> {
  await db.query('SELECT pg_stat_force_next_flush()');
  const res = await db.query<{ dead: number; analyzed: boolean; vacuumed: boolean }>(
    `SELECT n_dead_tup::int AS dead,
            last_analyze IS NOT NULL AS analyzed, last_vacuum IS NOT NULL AS vacuumed
       FROM pg_stat_user_tables WHERE relname = 'runs' AND schemaname = current_schema()`,
  );
  return res.rows[0]!;
}

async function insertRunsInBulk(db: Db, teamId: string, count: number): Promise<void> {
  await db.query(
    `INSERT INTO runs (id, team_id, title, prompt, state, session_id)
     SELECT 'run_m' || lpad(g::text, 12, '0'), $1, 'Run ' || g, 'Do ' || g, 'QUEUED', md5(g::text) FROM generate_series(1, $2::int) g`,
    [teamId, count],
  );
}

describe.skipIf(!pglite)('table maintenance on PGlite, which has no autovacuum', () => {
  let database: TestDatabase | undefined;
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    await database?.close();
    server = undefined;
    database = undefined;
  });

  it('analyzes a table that grew, so the look-up of a run by id planned while it was empty uses the primary key again', async () => {
    database = await createTestDatabase('pglite');
    const { db } = database;
    const teamId = (await insertTeam(db, newId('team'), 'maintenance')).id;
    // the prepared look-up is planned, and its generic plan kept, while runs is empty
    for (let i = 0; i < 10; i++) await getRun(db, teamId, `run_none${i}`);
    await insertRunsInBulk(db, teamId, 20_000);
    const planInUse = async (): Promise<string> => {
      const statement = await db.query<{ name: string }>(
        `SELECT name FROM pg_prepared_statements WHERE statement LIKE '%FROM runs WHERE team_id = $1 AND id = $2'`,
      );
      const plan = await db.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN EXECUTE ${statement.rows[0]!.name}('${teamId}', 'run_m000000001000')`,
      );
      return plan.rows.map((r) => r['QUERY PLAN']).join('\n');
    };
    // the plan made for an empty table reads every run of the team through another index
    expect(await planInUse()).not.toContain('runs_pkey');

    const pass = await maintainTables(db);
    expect(pass.analyzed).toContain('runs');
    expect(pass.vacuumed).not.toContain('runs');
    expect((await runsActivity(db)).analyzed).toBe(true);
    expect(await planInUse()).toContain('Index Scan using runs_pkey');
    expect((await getRun(db, teamId, 'run_m000000001000'))?.title).toBe('Run 1000');

    // nothing changed since: nothing is due
    expect((await maintainTables(db)).analyzed).not.toContain('runs');
  });

  it('vacuums a table whose updates left more dead rows than a fifth of it, and leaves one below the threshold alone', async () => {
    database = await createTestDatabase('pglite');
    const { db } = database;
    const teamId = (await insertTeam(db, newId('team'), 'maintenance')).id;
    await insertRunsInBulk(db, teamId, 5_000);
    await maintainTables(db);

    await db.query(`UPDATE runs SET state = 'CANCELLED' WHERE id <= 'run_m000000000500'`);
    expect((await runsActivity(db)).dead).toBe(500);
    expect((await maintainTables(db)).vacuumed).not.toContain('runs');

    await db.query(`UPDATE runs SET state = 'SUCCEEDED' WHERE id > 'run_m000000000500' AND id <= 'run_m000000002000'`);
    expect((await runsActivity(db)).dead).toBe(2_000);
    const pass = await maintainTables(db);
    expect(pass.vacuumed).toEqual(expect.arrayContaining(['runs']));
    const after = await runsActivity(db);
    expect(after.vacuumed).toBe(true);
    expect(after.dead).toBe(0);
    expect(
      (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM runs WHERE state = 'SUCCEEDED'`)).rows[0]!.n,
    ).toBe(1_500);
  });

  /** Where the last checkpoint's redo starts, and the WAL written since, in bytes. */
  const walState = async (db: Db) =>
    (
      await db.query<{ redo: string; since: number }>(
        'SELECT redo_lsn::text AS redo, (pg_current_wal_lsn() - redo_lsn)::float8 AS since FROM pg_control_checkpoint()',
      )
    ).rows[0]!;
  const never = { walBytes: Number.MAX_SAFE_INTEGER, maxAgeMs: Number.MAX_SAFE_INTEGER };

  it('makes a checkpoint once the WAL since the last one reaches its size, and none before', async () => {
    database = await createTestDatabase('pglite');
    const { db } = database;
    await insertTeam(db, 'team_wal', 'WAL');
    await insertRunsInBulk(db, 'team_wal', 2_000);
    const before = await walState(db);
    expect(await checkpointIfDue(db, { ...never, walBytes: before.since + 1_000_000 })).toBeUndefined();
    expect((await walState(db)).redo).toBe(before.redo);

    const closed = await checkpointIfDue(db, { ...never, walBytes: before.since });
    expect(closed).toBeGreaterThanOrEqual(before.since);
    const after = await walState(db);
    expect(after.redo).not.toBe(before.redo);
    expect(after.since).toBeLessThan(1024);
  });

  it('makes a checkpoint when the last one is older than its age and WAL was written since, not when nothing was', async () => {
    database = await createTestDatabase('pglite');
    const { db } = database;
    await insertTeam(db, 'team_age', 'Age');
    await insertRunsInBulk(db, 'team_age', 100);
    expect(await checkpointIfDue(db, { ...never, maxAgeMs: 0 })).toBeGreaterThan(0);
    const quiet = await walState(db);
    expect(await checkpointIfDue(db, { ...never, maxAgeMs: 0 })).toBeUndefined();
    expect((await walState(db)).redo).toBe(quiet.redo);
  });

  it('ends a maintenance pass with the checkpoint that is due', async () => {
    database = await createTestDatabase('pglite');
    const { db } = database;
    await insertTeam(db, 'team_pass', 'Pass');
    await insertRunsInBulk(db, 'team_pass', 500);
    const pass = await maintainTables(db, undefined, { ...never, walBytes: 1 });
    expect(pass.checkpointed).toBeGreaterThan(0);
    expect((await walState(db)).since).toBeLessThan(1024);
  });

  it('looks at the WAL between passes, and makes the checkpoint that is due without waiting for the next pass', async () => {
    database = await createTestDatabase('pglite');
    const { db } = database;
    await insertTeam(db, 'team_look', 'Look');
    // the free-space maps maintenance makes first write WAL of their own: made, and checkpointed, beforehand
    await createIndexFreeSpaceMaps(db);
    await db.exec('CHECKPOINT');
    const before = await walState(db);
    // the loop's statements, counted: one for the free-space maps (none missing), then one per look at the WAL
    let statements = 0;
    const ran = new EventEmitter();
    const counted: Db = {
      ...db,
      query<Row>(text: string, params?: Parameters<Db['query']>[1]) {
        statements++;
        const answer = db.query<Row>(text, params);
        void answer.finally(() => ran.emit('statement')).catch(() => {});
        return answer;
      },
    };
    // asks again after each statement of the loop has ended, never on a timer
    const afterStatements = <T>(check: () => Promise<T | undefined | false> | T | undefined | false, what: string) =>
      askWhenPoked(
        (poke) => {
          ran.on('statement', poke);
          return () => ran.off('statement', poke);
        },
        check,
        { what, timeoutMs: 5_000 },
      );
    const stop = startTableMaintenance(counted, silentLog, {
      intervalMs: 3_600_000,
      checkpointCheckMs: 50,
      checkpoints: { ...never, walBytes: 256 * 1024 },
    });
    try {
      await afterStatements(() => statements >= 4, 'four statements of the loop');
      expect((await walState(db)).redo, 'no checkpoint while little WAL was written').toBe(before.redo);
      await insertRunsInBulk(db, 'team_look', 2_000);
      await afterStatements(async () => (await walState(db)).redo !== before.redo, 'the checkpoint');
      expect((await runsActivity(db)).analyzed, 'the tables wait for their own pass').toBe(false);
    } finally {
      await stop();
    }
  });

  it('gives the indexes an empty free-space map once, and they keep working', async () => {
    database = await createTestDatabase('pglite');
    const { db } = database;
    const fsmSize = async (index: string): Promise<number> =>
      (await db.query<{ size: number }>(`SELECT pg_relation_size($1::regclass, 'fsm')::int AS size`, [index])).rows[0]!
        .size;
    expect(await fsmSize('webhook_deliveries_identity')).toBe(0);
    const pass = await maintainTables(db);
    expect(pass.freeSpaceMaps).toContain('webhook_deliveries_identity');
    expect(pass.freeSpaceMaps).toContain('runs_pkey');
    expect(await fsmSize('webhook_deliveries_identity'), 'the index has a free-space map').toBeGreaterThan(0);
    expect(await createIndexFreeSpaceMaps(db), 'none is missing any more').toEqual([]);
    expect(
      (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_largeobject_metadata')).rows[0]!.n,
      'the page left no large object',
    ).toBe(0);

    // enough rows to split many pages of the runs indexes, which then still find every row
    const teamId = (await insertTeam(db, newId('team'), 'fsm')).id;
    await insertRunsInBulk(db, teamId, 20_000);
    await db.query(`DELETE FROM runs WHERE id < 'run_m000000010000'`);
    await db.exec('VACUUM runs');
    await insertRunsInBulk(db, teamId, 5_000);
    const found = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM runs WHERE team_id = $1 AND id IN ('run_m000000000001', 'run_m000000012345', 'run_m000000019999')`,
      [teamId],
    );
    expect(found.rows[0]!.n).toBe(3);
    expect(await fsmSize('runs_pkey'), 'the map is still there').toBeGreaterThan(0);
  });

  it('gives the indexes their free-space maps as soon as maintenance starts, logging their count', async () => {
    database = await createTestDatabase('pglite');
    const { db } = database;
    const lines: Record<string, unknown>[] = [];
    let logged!: () => void;
    const firstLine = new Promise<void>((r) => (logged = r));
    const log = pino(
      { level: 'info' },
      {
        write: (line: string) => {
          lines.push(JSON.parse(line));
          logged();
        },
      },
    );
    const stop = startTableMaintenance(db, log as unknown as Logger, { intervalMs: 3_600_000 });
    try {
      // the line is logged once the maps are made
      await firstLine;
      const size = await db.query<{ size: number }>(
        `SELECT pg_relation_size('webhook_deliveries_identity'::regclass, 'fsm')::int AS size`,
      );
      expect(size.rows[0]!.size).toBeGreaterThan(0);
      expect(lines.length).toBeGreaterThan(0);
      // A count, not the name of every index, in the process's start-up output.
      expect(lines[0]!.freeSpaceMaps).toBeGreaterThan(30);
    } finally {
      await stop();
    }
  });

  it('runs in agentyard serve on PGlite every AGENTYARD_PGLITE_MAINTENANCE_SECONDS', async () => {
    // the server's log says what each pass did
    const out = new PassThrough();
    let text = '';
    out.on('data', (chunk: Buffer) => (text += chunk.toString()));
    server = await startTestServer('pglite', {
      config: { pgliteMaintenanceSeconds: 1 },
      log: createLogger('info', 'json', out),
    });
    const { db } = server.server.ctx;
    const teamId = (await db.query<{ id: string }>('SELECT id FROM teams LIMIT 1')).rows[0]!.id;
    await insertRunsInBulk(db, teamId, 2_000);
    await outputMatches(out, /"analyzed":\[[^\]]*"runs"[^\n]*"msg":"maintained tables/, {
      what: 'a timed maintenance pass that analyzed runs',
      sofar: () => text,
      timeoutMs: 15_000,
    });
    expect((await runsActivity(db)).analyzed).toBe(true);
  });
});
