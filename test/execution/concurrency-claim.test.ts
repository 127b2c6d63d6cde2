/**
 * Concurrency keys and maxActiveRuns at claim time (docs/governance.md, "Concurrency keys"), on the queue's
 * real functions: a run whose key (or factory) is at its limit is not claimed, by the service's executors, a
 * self-hosted worker or the Kubernetes Job executor, and says why; it is claimed once a run of its key ends.
 * On PostgreSQL, two engine instances (two connection pools) claiming at once never have two runs of a
 * `limit: 1` key active.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyConcurrency, concurrencySkip } from '../../src/automations/concurrency.ts';
import * as engine from '../../src/engine/engine.ts';
import type { InsertRun } from '../../src/engine/engine.ts';
import { claimRuns } from '../../src/engine/claim.ts';
import type { ClaimOptions } from '../../src/engine/claim.ts';
import type { Db } from '../../src/kernel/db.ts';
import { newId } from '../../src/kernel/ids.ts';
import { openPostgres } from '../../src/store/pg.ts';
import { createTestDatabase, ENGINES } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';
import { queuedRun } from '../support/run-rows.ts';

const OPTIONS: ClaimOptions = {
  limit: 20,
  harnesses: { spellings: ['noop', 'oz'], types: ['noop', 'noop'] },
  executor: 'service:test',
  leaseMs: 60_000,
};

const claimServiceRuns = (db: Db, options: ClaimOptions) => claimRuns(db, undefined, { kind: 'service' }, options);
const claimWorkerRuns = (
  db: Db,
  teamId: string,
  workerId: string,
  registration: { trusted: boolean; registrant: string | null },
  options: ClaimOptions,
) => claimRuns(db, undefined, { kind: 'worker', teamId, workerId, registration }, options);

interface Fixture {
  teamId: string;
  factoryId: string;
}

async function fixture(db: Db, maxActiveRuns?: number): Promise<Fixture> {
  const teamId = newId('team');
  const factoryId = newId('fac');
  await db.query('INSERT INTO teams (id, name) VALUES ($1, $2)', [teamId, `team ${teamId}`]);
  await db.query(`INSERT INTO factories (id, team_id, name, source, definition) VALUES ($1, $2, $3, '{}', $4)`, [
    factoryId,
    teamId,
    `factory ${factoryId}`,
    JSON.stringify({ factory: maxActiveRuns === undefined ? {} : { maxActiveRuns } }),
  ]);
  return { teamId, factoryId };
}

function row(f: Fixture, prompt: string, over: Partial<InsertRun> = {}): InsertRun {
  return queuedRun(f.teamId, { title: prompt, prompt, factoryId: f.factoryId, ...over });
}

/** Queues runs one by one (oldest first), each with the key and limit a firing stores. */
async function queue(
  db: Db,
  f: Fixture,
  runs: { key?: string; limit?: number; prompt: string; over?: Partial<InsertRun> }[],
): Promise<string[]> {
  const ids: string[] = [];
  for (const r of runs) {
    const inserted = await engine.insertRun(db, row(f, r.prompt, r.over));
    if (r.key !== undefined)
      await engine.setRunConcurrency(db, inserted.id, { key: r.key, limit: r.limit ?? 1, heldMessage: null });
    ids.push(inserted.id);
  }
  return ids;
}

async function states(db: Db, ids: readonly string[]): Promise<Record<string, { state: string; message?: string }>> {
  const res = await db.query<{ id: string; state: string; status_message: { message: string } | null }>(
    'SELECT id, state, status_message FROM runs WHERE id = ANY($1::text[])',
    [ids as string[]],
  );
  return Object.fromEntries(
    res.rows.map((r) => [r.id, { state: r.state, ...(r.status_message ? { message: r.status_message.message } : {}) }]),
  );
}

const succeed = (db: Db, id: string) => engine.applyRunEvent(db, id, 'succeed');

describe.each(ENGINES)('concurrency at claim on %s', (dbEngine) => {
  let database: TestDatabase;
  let db: Db;
  beforeAll(async () => {
    database = await createTestDatabase(dbEngine);
    db = database.db;
  });
  afterAll(async () => {
    await database?.close();
  });

  it('limit 1: one run of a key is claimed, the others wait saying why, the next starts when it ends', async () => {
    const f = await fixture(db);
    const [k1, k2, k3, l1, free] = await queue(db, f, [
      { key: 'acme/api#7', prompt: 'k1' },
      { key: 'acme/api#7', prompt: 'k2' },
      { key: 'acme/api#7', prompt: 'k3' },
      { key: 'acme/api#8', prompt: 'l1' },
      { prompt: 'no key' },
    ]);
    const first = await claimServiceRuns(db, OPTIONS);
    expect(first.map((c) => c.run.id).sort()).toEqual([k1, l1, free].sort());
    let now = await states(db, [k1!, k2!, k3!]);
    expect(now[k1!]!.state).toBe('CLAIMED');
    expect(now[k2!]).toEqual({ state: 'QUEUED', message: 'queued: concurrency key acme/api#7 at limit 1' });
    expect(now[k3!]).toEqual({ state: 'QUEUED', message: 'queued: concurrency key acme/api#7 at limit 1' });
    // a claim while the key is full takes nothing of it
    expect(await claimServiceRuns(db, OPTIONS)).toEqual([]);

    await succeed(db, k1!);
    const second = await claimServiceRuns(db, OPTIONS);
    expect(second.map((c) => c.run.id)).toEqual([k2]);
    // the claim clears the message of the run it takes
    expect(second[0]!.run.status_message).toBeNull();
    now = await states(db, [k2!, k3!]);
    expect(now[k2!]!.state).toBe('CLAIMED');
    expect(now[k3!]!.state).toBe('QUEUED');
  });

  it('limit 2 takes two runs of a key in one claim, and no more', async () => {
    const f = await fixture(db);
    const ids = await queue(
      db,
      f,
      [1, 2, 3, 4].map((i) => ({ key: 'nightly', limit: 2, prompt: `n${i}` })),
    );
    const claimed = await claimServiceRuns(db, OPTIONS);
    expect(claimed.map((c) => c.run.id)).toEqual(ids.slice(0, 2));
    expect((await states(db, [ids[2]!]))[ids[2]!]!.message).toBe('queued: concurrency key nightly at limit 2');
  });

  it('keys are per factory: the same key in two factories does not hold', async () => {
    const a = await fixture(db);
    const b = await fixture(db);
    const [ra] = await queue(db, a, [{ key: 'shared', prompt: 'a' }]);
    const [rb] = await queue(db, b, [{ key: 'shared', prompt: 'b' }]);
    const claimed = await claimServiceRuns(db, OPTIONS);
    expect(claimed.map((c) => c.run.id).sort()).toEqual([ra, rb].sort());
  });

  it('maxActiveRuns caps the active runs of a factory, whatever started them', async () => {
    const f = await fixture(db, 2);
    const max = await db.query<{ max_active_runs: number }>('SELECT max_active_runs FROM factories WHERE id = $1', [
      f.factoryId,
    ]);
    expect(max.rows[0]!.max_active_runs).toBe(2);
    const ids = await queue(db, f, [{ prompt: 'p1' }, { key: 'x', prompt: 'p2' }, { prompt: 'p3' }, { prompt: 'p4' }]);
    const claimed = await claimServiceRuns(db, OPTIONS);
    expect(claimed.map((c) => c.run.id)).toEqual(ids.slice(0, 2));
    const now = await states(db, ids);
    expect(now[ids[2]!]).toEqual({ state: 'QUEUED', message: 'queued: factory at maxActiveRuns 2' });
    expect(now[ids[3]!]).toEqual({ state: 'QUEUED', message: 'queued: factory at maxActiveRuns 2' });
    expect(await claimServiceRuns(db, OPTIONS)).toEqual([]);
    await succeed(db, ids[0]!);
    expect((await claimServiceRuns(db, OPTIONS)).map((c) => c.run.id)).toEqual([ids[2]]);
  });

  it('cancelRunning with limit 2 keeps the newest older run, cancels the rest with their children', async () => {
    const f = await fixture(db);
    const [oldest, older, newest] = await queue(db, f, [
      { key: 'pr#9', limit: 2, prompt: 'o1' },
      { key: 'pr#9', limit: 2, prompt: 'o2' },
      { key: 'pr#9', limit: 2, prompt: 'o3' },
    ]);
    const [child] = await queue(db, f, [{ prompt: 'child', over: { parentRunId: oldest! } }]);
    const policy = { key: 'pr#{{n}}', limit: 2, onNew: 'cancelRunning' as const };
    const cancelled = await db.transaction(async (tx) => {
      const run = await engine.insertRun(tx, row(f, 'newer'));
      const changes = await applyConcurrency(tx, run, f.factoryId, { policy, key: 'pr#9' });
      return { run, changes };
    });
    expect(cancelled.changes.map((c) => c.id).sort()).toEqual([oldest, older, child].sort());
    const now = await states(db, [oldest!, older!, newest!, child!, cancelled.run.id]);
    expect(now[oldest!]).toEqual({
      state: 'CANCELLED',
      message: `cancelled by a newer run ${cancelled.run.id} (concurrency key pr#9)`,
    });
    expect(now[child!]!.state).toBe('CANCELLED');
    expect(now[newest!]!.state).toBe('QUEUED');
    expect(now[cancelled.run.id]!.state).toBe('QUEUED');
    // a skip counts the runs of the key that have not ended, queued ones included
    expect(await concurrencySkip(db, f.factoryId, { policy: { ...policy, onNew: 'skip' }, key: 'pr#9' })).toMatch(
      /^skipped: concurrency key pr#9 at limit 2 \(onNew: skip; 2 runs of the key not ended: /,
    );
    expect(await concurrencySkip(db, f.factoryId, { policy: { ...policy, onNew: 'skip' }, key: 'pr#10' })).toBe(
      undefined,
    );
    // nothing left queued for the next tests' claims
    for (const id of [newest!, cancelled.run.id]) await engine.applyRunEvent(db, id, 'cancel');
  });

  it("a self-hosted worker's claim keeps the key's limit", async () => {
    const f = await fixture(db);
    const over = { workerHost: 'worker-conc', config: { worker_host: 'worker-conc' } };
    const ids = await queue(db, f, [
      { key: 'k', prompt: 'w1', over },
      { key: 'k', prompt: 'w2', over },
    ]);
    const registration = { trusted: true, registrant: null };
    const first = await claimWorkerRuns(db, f.teamId, 'worker-conc', registration, OPTIONS);
    expect(first.map((c) => c.run.id)).toEqual([ids[0]]);
    expect(await claimWorkerRuns(db, f.teamId, 'worker-conc', registration, OPTIONS)).toEqual([]);
    await succeed(db, ids[0]!);
    const next = await claimWorkerRuns(db, f.teamId, 'worker-conc', registration, OPTIONS);
    expect(next.map((c) => c.run.id)).toEqual([ids[1]]);
  });

  it("the Kubernetes Job executor's lock keeps the key's limit", async () => {
    const f = await fixture(db);
    await db.query(`INSERT INTO kubernetes_factories (factory_id, namespace, name, uid) VALUES ($1, 'ns', $2, $3)`, [
      f.factoryId,
      `f-${f.factoryId}`,
      crypto.randomUUID(),
    ]);
    const ids = await queue(db, f, [{ key: 'k', prompt: 'j1' }, { key: 'k', prompt: 'j2' }, { prompt: 'j3' }]);
    // the service's executors leave a Kubernetes factory's runs alone
    expect(await claimServiceRuns(db, OPTIONS)).toEqual([]);
    const lockAndClaim = async () =>
      (
        await claimRuns(
          db,
          undefined,
          { kind: 'kubernetes', serviceHosts: ['service'], namespace: 'ns' },
          { ...OPTIONS, executor: 'kubernetes:ns' },
        )
      ).map((c) => c.run.id);
    expect(await lockAndClaim()).toEqual([ids[0], ids[2]]);
    expect(await lockAndClaim()).toEqual([]);
    await succeed(db, ids[0]!);
    expect(await lockAndClaim()).toEqual([ids[1]]);
  });
});

describe.skipIf(!ENGINES.includes('postgres'))('two engine instances claiming at once on postgres', () => {
  let database: TestDatabase;
  let other: Db;
  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    other = await openPostgres({ connectionString: database.url! });
  });
  afterAll(async () => {
    await other?.close();
    await database?.close();
  });

  it('limit 1 never has two runs of a key active, whatever the claims interleave', async () => {
    const { db } = database;
    const f = await fixture(db);
    const keys = ['pr#1', 'pr#2', 'pr#3', 'pr#4'];
    const ids = await queue(
      db,
      f,
      Array.from({ length: 32 }, (_, i) => ({ key: keys[i % keys.length]!, prompt: `r${i}` })),
    );
    const pools = [db, other];
    let claimedTotal = 0;
    for (let round = 0; round < 20 && claimedTotal < ids.length; round++) {
      // eight claims at once, four from each engine instance, each able to take every run
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          claimServiceRuns(pools[i % 2]!, { ...OPTIONS, executor: `service:p${i % 2}`, limit: 8 }),
        ),
      );
      const claimed = results.flat();
      claimedTotal += claimed.length;
      const active = await db.query<{ key: string; n: number }>(
        `SELECT concurrency_key AS key, count(*)::int AS n FROM runs
          WHERE factory_id = $1 AND state IN ('CLAIMED', 'INPROGRESS') GROUP BY concurrency_key`,
        [f.factoryId],
      );
      for (const r of active.rows) expect(r.n, `round ${round}: key ${r.key}`).toBe(1);
      // each key (8 runs each) has one run claimed per round: the limit never starves a key either
      expect(claimed.length, `round ${round}`).toBe(keys.length);
      for (const c of claimed) await succeed(db, c.run.id);
    }
    expect(claimedTotal).toBe(ids.length);
  });
});
