/**
 * The kernel's durable job queue on both engines: the due job waiting longest is claimed with a lease (its
 * attempts counted, `run_after` moved past the lease so no other claim takes it meanwhile), a job not yet due
 * or failing the queue's `due` condition is left, and the drain loop hands jobs to their handler, defers them
 * with back-off when asked (or on a throw), and tells the last attempt it is final.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DurableJobQueue } from '../../src/kernel/job-queue.ts';
import type { QueuedJob } from '../../src/kernel/job-queue.ts';
import { createTestDatabase, ENGINES } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';

interface TestJob extends QueuedJob {
  payload: string;
  state: string;
  error: string | null;
}

describe.each(ENGINES)('the durable job queue on %s', (engine) => {
  let t: TestDatabase;
  const spec = { table: 'test_jobs', leaseSeconds: 60, maxAttempts: 3, backoffSeconds: [5, 30] };
  beforeAll(async () => {
    t = await createTestDatabase(engine);
    await t.db.exec(`CREATE TABLE test_jobs (
      id text PRIMARY KEY, payload text NOT NULL, ready boolean NOT NULL DEFAULT true,
      state text NOT NULL DEFAULT 'pending', attempts integer NOT NULL DEFAULT 0,
      run_after timestamptz NOT NULL DEFAULT ay_now(), error text)`);
  });
  afterAll(async () => {
    await t?.close();
  });

  const add = async (id: string, runAfter: string, ready = true) =>
    t.db.query(`INSERT INTO test_jobs (id, payload, ready, run_after) VALUES ($1, $1, $2, ay_now() + $3::interval)`, [
      id,
      ready,
      runAfter,
    ]);
  const row = async (id: string) =>
    (
      await t.db.query<{ state: string; attempts: number; error: string | null; due_in: number }>(
        `SELECT state, attempts, error, extract(epoch FROM run_after - ay_now())::float8 AS due_in FROM test_jobs WHERE id = $1`,
        [id],
      )
    ).rows[0]!;

  it('claims the due job waiting longest, with a lease, and skips what is not due', async () => {
    await t.db.exec('DELETE FROM test_jobs');
    const queue = new DurableJobQueue<TestJob>({ ...spec, due: 'd.ready' });
    await add('later', '1 hour');
    await add('newer', '-1 second');
    await add('older', '-1 minute');
    await add('not-ready', '-2 minutes', false);
    const first = await queue.claim(t.db);
    expect(first).toMatchObject({ id: 'older', attempts: 1, payload: 'older' });
    // held for the lease: the next claim takes the other due job, then nothing
    expect((await row('older')).due_in).toBeGreaterThan(55);
    expect((await queue.claim(t.db))?.id).toBe('newer');
    expect(await queue.claim(t.db)).toBeUndefined();
    await queue.defer(t.db, 'older', 0, 'x'.repeat(2000));
    expect((await row('older')).error).toHaveLength(1000);
    expect((await queue.claim(t.db))?.attempts).toBe(2);
  });

  it('drains: ends what its handler ends, defers a retry or a throw by back-off, and says the last attempt', async () => {
    await t.db.exec('DELETE FROM test_jobs');
    const queue = new DurableJobQueue<TestJob>(spec);
    await add('ok', '-1 second');
    await add('flaky', '-2 seconds');
    await add('broken', '-3 seconds');
    const seen: string[] = [];
    const drain = () =>
      queue.drain(
        t.db,
        async (job, { final }) => {
          seen.push(`${job.id}:${job.attempts}:${final}`);
          if (job.id === 'broken') throw new Error('boom');
          if (job.id === 'flaky' && !final) return { retry: 'not yet' };
          await t.db.query(`UPDATE test_jobs SET state = 'done' WHERE id = $1`, [job.id]);
          return 'ended';
        },
        { stopped: () => false },
      );
    await drain();
    expect(seen).toEqual(['broken:1:false', 'flaky:1:false', 'ok:1:false']);
    expect(await row('ok')).toMatchObject({ state: 'done', attempts: 1 });
    const flaky = await row('flaky');
    expect(flaky).toMatchObject({ state: 'pending', attempts: 1, error: 'not yet' });
    expect(flaky.due_in).toBeGreaterThan(3);
    expect(flaky.due_in).toBeLessThanOrEqual(5);
    expect(await row('broken')).toMatchObject({ state: 'pending', error: 'boom' });
    // come due twice more: the third attempt is the last, and the handler ends it
    for (let i = 0; i < 2; i++) {
      await t.db.query(`UPDATE test_jobs SET run_after = ay_now() - interval '1 second' WHERE id = 'flaky'`);
      await drain();
    }
    expect(seen.slice(3)).toEqual(['flaky:2:false', 'flaky:3:true']);
    expect(await row('flaky')).toMatchObject({ state: 'done', attempts: 3 });
    // the back-off grew with the attempts (5 s, then 30 s for the 2nd and later)
    expect(queue.backoffMs(1)).toBe(5_000);
    expect(queue.backoffMs(2)).toBe(30_000);
    expect(queue.backoffMs(7)).toBe(30_000);
  });

  it('refuses a table name that is not an identifier', () => {
    expect(() => new DurableJobQueue({ ...spec, table: 'jobs; DROP TABLE runs' })).toThrow(/not a table name/);
  });
});
