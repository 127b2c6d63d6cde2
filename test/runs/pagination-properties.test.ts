/**
 * Keyset pagination, property-based: whatever the sort, the page size and the runs inserted between page
 * fetches, every run present when the walk starts is seen exactly once, and no run is seen twice.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertTeam } from '../../src/identity/sql.ts';
import { listRuns, SORT_FIELDS } from '../../src/runs/list.ts';
import type { SortField, SortOrder } from '../../src/runs/list.ts';
import type { Db } from '../../src/kernel/db.ts';
import { newId } from '../../src/kernel/ids.ts';
import { createTestDatabase, ENGINES } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

/** Few distinct values, so that ties (same title, same millisecond, same skill) are common. */
const runArb = fc.record({
  title: fc.constantFrom('alpha', 'Alpha', 'beta', 'beta', 'gamma', 'ß', 'zeta', ''),
  skill: fc.option(fc.constantFrom('a/r:one', 'a/r:two', 'b/r:one'), { nil: null }),
  createdMs: fc.integer({ min: 0, max: 6 }),
  updatedMs: fc.integer({ min: 0, max: 6 }),
  state: fc.constantFrom('QUEUED', 'QUEUED', 'SUCCEEDED', 'FAILED', 'INPROGRESS'),
});

const BASE = Date.UTC(2026, 0, 1);

type RunInput = typeof runArb extends fc.Arbitrary<infer T> ? T : never;

async function insertRuns(db: Db, teamId: string, runs: RunInput[]): Promise<string[]> {
  const ids: string[] = [];
  for (const r of runs) {
    const id = newId('run');
    ids.push(id);
    await db.query(
      `INSERT INTO runs (id, team_id, title, prompt, state, skill_spec, session_id, created_at, updated_at)
       VALUES ($1, $2, $3, 'p', $4, $5, $1, $6, $7)`,
      [id, teamId, r.title, r.state, r.skill, new Date(BASE + r.createdMs), new Date(BASE + r.updatedMs)],
    );
  }
  return ids;
}

const scenarioArb = fc.record({
  initial: fc.array(runArb, { minLength: 0, maxLength: 30 }),
  sortBy: fc.constantFrom<SortField>(...SORT_FIELDS),
  sortOrder: fc.constantFrom<SortOrder>('asc', 'desc'),
  pageSize: fc.integer({ min: 1, max: 12 }),
  /** Runs inserted before the 2nd, 3rd, ... page fetch (an ascending walk under endless inserts never ends). */
  insertsBetweenPages: fc.array(fc.array(runArb, { maxLength: 3 }), { minLength: 1, maxLength: 6 }),
  /** No state (merged per state for the time sorts), one state (one index scan), or two (merged). */
  stateFilter: fc.constantFrom<readonly string[] | undefined>(undefined, ['QUEUED'], ['QUEUED', 'FAILED']),
});

describe.each(ENGINES)('pagination properties on %s', (engine) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(engine);
  });
  afterAll(async () => {
    await database?.close();
  });

  it('sees every run present at the start exactly once, never a duplicate, under inserts between pages', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (sc) => {
        const db = database.db;
        const team = await insertTeam(db, newId('team'), `t-${newId('team')}`);
        const initial = await insertRuns(db, team.id, sc.initial);
        const expected = new Set(
          initial.filter((_, i) => !sc.stateFilter || sc.stateFilter.includes(sc.initial[i]!.state)),
        );
        const seen: string[] = [];
        let cursor: string | undefined;
        let page = 0;
        for (;;) {
          const result = await listRuns(db, {
            teamId: team.id,
            filters: sc.stateFilter ? { states: [...sc.stateFilter] } : {},
            sortBy: sc.sortBy,
            sortOrder: sc.sortOrder,
            limit: sc.pageSize,
            ...(cursor ? { cursor } : {}),
          });
          expect(result.rows.length).toBeLessThanOrEqual(sc.pageSize);
          seen.push(...result.rows.map((r) => r.id));
          if (!result.nextCursor) break;
          expect(result.rows.length).toBe(sc.pageSize);
          cursor = result.nextCursor;
          await insertRuns(db, team.id, sc.insertsBetweenPages[page] ?? []);
          page++;
          if (page > 500) throw new Error('pagination does not end');
        }
        expect(new Set(seen).size, 'no duplicates').toBe(seen.length);
        for (const id of expected) expect(seen, `run ${id} present at the start was not seen`).toContain(id);
      }),
      { numRuns: engine === 'pglite' ? 60 : 40 },
    );
  }, 180_000);

  it('orders each page consistently with the next (the walk equals one big page when nothing is inserted)', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (sc) => {
        const db = database.db;
        const team = await insertTeam(db, newId('team'), `t-${newId('team')}`);
        await insertRuns(db, team.id, sc.initial);
        const query = { teamId: team.id, filters: {}, sortBy: sc.sortBy, sortOrder: sc.sortOrder };
        const all = (await listRuns(db, { ...query, limit: 500 })).rows.map((r) => r.id);
        if (sc.sortBy === 'updated_at' || sc.sortBy === 'created_at') {
          // the per-state merge answers what one ordered scan of the table answers
          const dir = sc.sortOrder === 'asc' ? 'ASC' : 'DESC';
          const reference = await db.query<{ id: string }>(
            `SELECT id FROM runs WHERE team_id = $1 ORDER BY ${sc.sortBy} ${dir}, id ${dir}`,
            [team.id],
          );
          expect(all).toEqual(reference.rows.map((r) => r.id));
        }
        const walked: string[] = [];
        let cursor: string | undefined;
        do {
          const result = await listRuns(db, { ...query, limit: sc.pageSize, ...(cursor ? { cursor } : {}) });
          walked.push(...result.rows.map((r) => r.id));
          cursor = result.nextCursor;
        } while (cursor);
        expect(walked).toEqual(all);
      }),
      { numRuns: 30 },
    );
  });
});

describe.each(ENGINES)('pagination through the HTTP API on %s', (engine) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(engine);
  });
  afterAll(async () => {
    await s?.close();
  });

  it('walks every run created before the walk exactly once while runs are created between pages', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 25 }),
        fc.integer({ min: 1, max: 9 }),
        fc.constantFrom(...SORT_FIELDS),
        fc.constantFrom('asc', 'desc'),
        async (count, limit, sortBy, sortOrder) => {
          const name = `walk-${newId('run')}`;
          const before: string[] = [];
          for (let i = 0; i < count; i++)
            before.push((await s.api('POST', '/agent/runs', { prompt: `r${i % 3}`, config: { name } })).body.run_id);
          const seen: string[] = [];
          let cursor: string | undefined;
          let inserts = 0;
          do {
            const res = await s.api(
              'GET',
              `/agent/runs?name=${name}&limit=${limit}&sort_by=${sortBy}&sort_order=${sortOrder}${cursor ? `&cursor=${cursor}` : ''}`,
            );
            expect(res.status).toBe(200);
            seen.push(...res.body.runs.map((r: { run_id: string }) => r.run_id));
            cursor = res.body.page_info.next_cursor;
            expect(res.body.page_info.has_next_page).toBe(cursor !== undefined);
            if (cursor && inserts++ < 4) await s.api('POST', '/agent/runs', { prompt: 'r1', config: { name } });
          } while (cursor);
          expect(new Set(seen).size).toBe(seen.length);
          for (const id of before) expect(seen).toContain(id);
        },
      ),
      { numRuns: 12 },
    );
  }, 180_000);
});
