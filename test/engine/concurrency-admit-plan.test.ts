/**
 * The claim's concurrency check (ay_concurrency_admit) looks its runs up by primary key even in a session that
 * planned it while `runs` was empty: a generic plan made then scanned the whole table on every claim until an
 * ANALYZE (docs/decisions.md, "The concurrency check never scans runs").
 */
import { describe, expect, it } from 'vitest';
import * as engine from '../../src/engine/engine.ts';
import type { Queryable } from '../../src/kernel/db.ts';
import { newId } from '../../src/kernel/ids.ts';
import { openPostgres } from '../../src/store/pg.ts';
import { createTestDatabase, ENGINES } from '../support/db.ts';
import { queuedRun } from '../support/run-rows.ts';

/** Sequential scans of `runs` so far, this session's counts included. */
async function runsSeqScans(q: Queryable): Promise<number> {
  await q.query('SELECT pg_stat_force_next_flush()');
  await q.query('SELECT 1');
  const res = await q.query<{ n: string }>(
    "SELECT seq_scan::text AS n FROM pg_stat_user_tables WHERE relname = 'runs' AND schemaname = current_schema()",
  );
  return Number(res.rows[0]!.n);
}

describe.each(ENGINES)('the concurrency check on %s', (engineName) => {
  it('finds its runs by primary key in a session that planned it while runs was empty', async () => {
    const t = await createTestDatabase(engineName);
    // one session: PGlite is one; PostgreSQL, one connection
    const session = t.url ? await openPostgres({ connectionString: t.url, maxConnections: 1 }) : t.db;
    try {
      const teamId = newId('team');
      await session.query('INSERT INTO teams (id, name) VALUES ($1, $2)', [teamId, `team ${teamId}`]);
      // planned (and its generic plan cached) on an empty table
      await session.query('SELECT ay_concurrency_admit($1::text[])', [['run_none']]);
      const rows = Array.from({ length: 3000 }, () => queuedRun(teamId));
      for (let i = 0; i < rows.length; i += 500) await engine.insertRuns(session, rows.slice(i, i + 500));
      const before = await runsSeqScans(session);
      const ids = rows.slice(0, 5).map((r) => r.id);
      const admitted = await session.query<{ ids: string[] }>('SELECT ay_concurrency_admit($1::text[]) AS ids', [ids]);
      expect(admitted.rows[0]!.ids).toEqual(ids);
      expect(await runsSeqScans(session)).toBe(before);
    } finally {
      if (session !== t.db) await session.close();
      await t.close();
    }
  });
});
