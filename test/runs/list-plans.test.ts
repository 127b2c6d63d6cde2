import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertTeam } from '../../src/identity/sql.ts';
import { listRuns } from '../../src/runs/list.ts';
import { getRunBySession, listConversationRuns } from '../../src/runs/sql.ts';
import type { RunFilters, SortField, SortOrder } from '../../src/runs/list.ts';
import type { Queryable, SqlValue } from '../../src/kernel/db.ts';
import { newId } from '../../src/kernel/ids.ts';
import { bulkInsertRuns } from '../../bench/support/bulk-runs.ts';
import { createTestDatabase, ENGINES } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Scan Direction'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

/** What `read` returns, and the plan of the (last) statement it sent. */
async function planOf<T>(db: Queryable, read: (q: Queryable) => Promise<T>): Promise<{ result: T; plan: PlanNode[] }> {
  let sent: { text: string; params: readonly SqlValue[] } | undefined;
  const recording: Queryable = {
    query: (text, params) => {
      sent = { text, params: params ?? [] };
      return db.query(text, params);
    },
  };
  const result = await read(recording);
  const explained = await db.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] | string }>(
    `EXPLAIN (FORMAT JSON) ${sent!.text}`,
    [...sent!.params],
  );
  const raw = explained.rows[0]!['QUERY PLAN'];
  const plan = (typeof raw === 'string' ? JSON.parse(raw) : raw) as [{ Plan: PlanNode }];
  return { result, plan: nodes(plan[0].Plan) };
}

async function planOfList(
  db: Queryable,
  teamId: string,
  filters: RunFilters,
  sortBy: SortField,
  sortOrder: SortOrder,
  cursor?: string,
) {
  const { result: page, plan } = await planOf(db, (q) =>
    listRuns(q, { teamId, filters, sortBy, sortOrder, limit: 50, ...(cursor ? { cursor } : {}) }),
  );
  return { page, plan };
}

const seqScansOfRuns = (plan: PlanNode[]): PlanNode[] =>
  plan.filter((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'runs');

// The list pages are read through the time-ordered indexes (migration 0005 keeps them in ascending order): both sort
// orders, first pages and pages by cursor, must be one index scan in the index's or the opposite direction, never a sort.
describe.each(ENGINES)('run list plans on %s', (engine) => {
  let database: TestDatabase;
  let teamId: string;
  beforeAll(async () => {
    database = await createTestDatabase(engine);
    teamId = (await insertTeam(database.db, newId('team'), 'plans')).id;
    await bulkInsertRuns(database.db, teamId, 'user_plans', 1, 20_000);
    // a conversation of three runs, each continuing the one before (parent) in the conversation of the first
    await database.db.query(
      `UPDATE runs SET conversation_id = 'run_bulk000000000000000100', parent_run_id = 'run_bulk' || lpad((substr(id, 9)::int - 1)::text, 18, '0')
        WHERE id IN ('run_bulk000000000000000101', 'run_bulk000000000000000102')`,
    );
    await database.db.exec('ANALYZE runs');
  }, 120_000);
  afterAll(async () => {
    await database.close();
  });

  const cases: [string, RunFilters, SortField][] = [
    ['no filter, by update', {}, 'updated_at'],
    ['no filter, by creation', {}, 'created_at'],
    ['one state, by update', { states: ['FAILED'] }, 'updated_at'],
    ['one state, by creation', { states: ['QUEUED'] }, 'created_at'],
    ['two states, by update', { states: ['QUEUED', 'FAILED'] }, 'updated_at'],
    ['two states, by creation', { states: ['SUCCEEDED', 'CANCELLED'] }, 'created_at'],
    ['agent name, by update', { configName: 'agent-3' }, 'updated_at'],
    ['agent name, by creation', { configName: 'agent-3' }, 'created_at'],
    ['model (no index of its own), by update', { modelId: 'model-1' }, 'updated_at'],
    ['created after, by creation', { createdAfter: new Date('2025-01-01T01:00:00Z') }, 'created_at'],
  ];
  for (const [name, filters, sortBy] of cases) {
    for (const sortOrder of ['desc', 'asc'] as const) {
      it(`${name}, ${sortOrder}: an index scan without a sort, on the first page and by cursor`, async () => {
        const first = await planOfList(database.db, teamId, filters, sortBy, sortOrder);
        expect(first.page.rows).toHaveLength(50);
        const next = await planOfList(database.db, teamId, filters, sortBy, sortOrder, first.page.nextCursor);
        expect(next.page.rows).toHaveLength(50);
        for (const { plan } of [first, next]) {
          expect(plan.map((n) => n['Node Type'])).not.toContain('Sort');
          expect(seqScansOfRuns(plan)).toEqual([]);
          const scans = plan.filter((n) => n['Node Type'] === 'Index Scan');
          expect(scans.length).toBeGreaterThan(0);
          for (const scan of scans) expect(scan['Index Name']).toMatch(/^runs_team_/);
        }
        // the rows match the filters
        for (const row of [...first.page.rows, ...next.page.rows]) {
          if (filters.states) expect(filters.states).toContain(row.state);
          if (filters.configName) expect(row.config_name).toBe(filters.configName);
          if (filters.modelId) expect(row.model_id).toBe(filters.modelId);
          if (filters.createdAfter) expect(row.created_at.getTime()).toBeGreaterThan(filters.createdAfter.getTime());
        }
        // the pages follow each other in the requested order
        const key = (r: { updated_at: Date; created_at: Date; id: string }): string =>
          `${r[sortBy === 'created_at' ? 'created_at' : 'updated_at'].toISOString()} ${r.id}`;
        const keys = [...first.page.rows, ...next.page.rows].map(key);
        const sorted = [...keys].sort();
        expect(keys).toEqual(sortOrder === 'asc' ? sorted : sorted.reverse());
      });
    }
  }

  it('finds a run by its session id (the public session page) through an index', async () => {
    const { session_id } = (
      await database.db.query<{ session_id: string }>(
        "SELECT session_id FROM runs WHERE id = 'run_bulk000000000000000500'",
      )
    ).rows[0]!;
    const { result, plan } = await planOf(database.db, (q) => getRunBySession(q, session_id));
    expect(result?.id).toBe('run_bulk000000000000000500');
    expect(seqScansOfRuns(plan)).toEqual([]);
  });

  it('reads a conversation through indexes', async () => {
    const { result, plan } = await planOf(database.db, (q) =>
      listConversationRuns(q, teamId, 'run_bulk000000000000000100'),
    );
    expect(result.map((r) => r.id)).toEqual([
      'run_bulk000000000000000100',
      'run_bulk000000000000000101',
      'run_bulk000000000000000102',
    ]);
    expect(seqScansOfRuns(plan)).toEqual([]);
  });

  it('lists the descendants of a run through indexes', async () => {
    const { page, plan } = await planOfList(
      database.db,
      teamId,
      { ancestorRunId: 'run_bulk000000000000000100' },
      'updated_at',
      'desc',
    );
    expect(page.rows.map((r) => r.id)).toEqual(['run_bulk000000000000000102', 'run_bulk000000000000000101']);
    expect(seqScansOfRuns(plan)).toEqual([]);
  });
});
