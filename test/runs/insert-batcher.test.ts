import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertTeam } from '../../src/identity/plans.ts';
import { RunInsertBatcher } from '../../src/runs/insert-batcher.ts';
import type { CreatedRun } from '../../src/runs/plans.ts';
import { prepareQueuedRun } from '../../src/runs/service.ts';
import { newId } from '../../src/util/ids.ts';
import { createTestDatabase, ENGINES } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';

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
    prepareQueuedRun(database.db, { teamId: team, prompt, source: 'API', creator: null, config: { name: 'b', worker_host: prompt === 'p3' ? 'box' : undefined } });

  it('writes concurrent creations together, each answered with its own run, and announces them once per batch', async () => {
    const announced: CreatedRun[][] = [];
    const batcher = new RunInsertBatcher(database.db, (runs) => announced.push(runs));
    const rows = await Promise.all(Array.from({ length: 40 }, (_, i) => prepare(`p${i}`)));
    const created = await Promise.all(rows.map((r) => batcher.insert(r)));
    expect(created.map((c) => c.id)).toEqual(rows.map((r) => r.id));
    expect(created.every((c) => c.state === 'QUEUED')).toBe(true);
    expect(created[3]!.worker_host).toBe('box');
    expect(announced.flat().length).toBe(40);
    expect(announced.length).toBeLessThan(40);
    const stored = await database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM runs WHERE id = ANY($1::text[])', [rows.map((r) => r.id)]);
    expect(stored.rows[0]!.n).toBe(40);
  });

  it('fails only the bad row of a batch', async () => {
    const batcher = new RunInsertBatcher(database.db, () => {}, { maxInFlight: 1 });
    const good = await Promise.all(Array.from({ length: 5 }, (_, i) => prepare(`good${i}`)));
    const bad = await prepare('bad', 'team_does_not_exist');
    const results = await Promise.allSettled([...good.slice(0, 2), bad, ...good.slice(2)].map((r) => batcher.insert(r)));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled']);
  });
});
