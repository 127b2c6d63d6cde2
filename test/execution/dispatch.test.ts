/**
 * Dispatch: fairness between teams (a burst of one team does not starve another), exactly one claimer per
 * run with two servers on one PostgreSQL database, waiting messages for runs nothing can take, the reaper
 * giving back a claimed run that never started, the workspace size limit, and the workspace sweep.
 */
import { RUNS_QUEUED_TOPIC } from '../../src/kernel/topics.ts';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimRuns } from '../../src/engine/claim.ts';
import { harnessChoice } from '../../src/execution/settings.ts';
import { createTestDatabase, ENGINES } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';
import { createRun, eventsOf, executionsOf, startExecServer, waitForState, whenRunsTold } from './support.ts';
import type { ExecServer } from './support.ts';
import { inState, waitForRun } from '../support/run-events.ts';

async function teamIdOf(s: ExecServer, key?: string): Promise<string> {
  return (await s.api('GET', '/whoami', undefined, key)).body.team.id;
}

describe.each(ENGINES)('dispatch on %s', (engine) => {
  it('takes turns between teams: a burst of one team does not go first until it is done', async () => {
    const s = await startExecServer(engine, {
      settings: { concurrency: 1, harnesses: ['noop'], defaultHarness: 'noop' },
    });
    try {
      const teamA = await teamIdOf(s);
      const teamB = (await s.api('POST', '/teams', { name: 'team-b' })).body.team.id as string;
      // every run queued before any claim: one transaction
      const ids = await s.server.ctx.db.transaction(async (tx) => {
        const made: { id: string; team: string }[] = [];
        for (const [team, n] of [
          [teamA, 6],
          [teamB, 2],
        ] as const) {
          for (let i = 0; i < n; i++) {
            const { run } = await s.server.services.runs.create(
              { teamId: team, prompt: `${team === teamA ? 'A' : 'B'}${i}`, source: 'API', creator: null },
              { within: tx },
            );
            made.push({ id: run.id, team });
          }
        }
        return made;
      });
      await s.server.ctx.bus.publish(RUNS_QUEUED_TOPIC, { run_id: ids[0]!.id, worker_host: null });
      // (team B's runs are not the admin key's to read through the API: their state is read from the database)
      const stateOf = async (id: string) =>
        (await s.server.ctx.db.query<{ state: string }>('SELECT state FROM runs WHERE id = $1', [id])).rows[0]?.state;
      await Promise.all(
        ids.map((r) => waitForRun(s.server.ctx.bus, r.id, inState('SUCCEEDED'), { current: () => stateOf(r.id) })),
      );
      const order = await s.server.ctx.db.query<{ prompt: string }>(
        `SELECT r.prompt FROM executions e JOIN runs r ON r.id = e.run_id WHERE e.run_id = ANY($1::text[]) ORDER BY e.claimed_at, e.id`,
        [ids.map((r) => r.id)],
      );
      // per team oldest first; the teams alternate while both have runs waiting
      expect(order.rows.map((r) => r.prompt)).toEqual(['A0', 'B0', 'A1', 'B1', 'A2', 'A3', 'A4', 'A5']);
    } finally {
      await s.close();
    }
  });

  it('says what a run waits for when no executor offers its harness', async () => {
    const s = await startExecServer(engine, { settings: { harnesses: ['claude'], defaultHarness: undefined } });
    try {
      const oz = await createRun(s, { prompt: 'no default harness here' });
      const codex = await createRun(s, { prompt: 'codex please', config: { harness: { type: 'codex' } } });
      const message = async (id: string) => (await s.api('GET', `/agent/runs/${id}`)).body.status_message?.message;
      expect(await whenRunsTold(s, 'the oz message', () => message(oz))).toBe(
        'Waiting for an executor with a default harness: no server offers one (set AGENTYARD_HARNESSES or AGENTYARD_DEFAULT_HARNESS)',
      );
      expect(await whenRunsTold(s, 'the codex message', () => message(codex))).toBe(
        'Waiting for an executor that runs the codex harness: no server offers it (AGENTYARD_HARNESSES)',
      );
      expect((await s.api('GET', `/agent/runs/${oz}`)).body.state).toBe('QUEUED');
    } finally {
      await s.close();
    }
  });

  it("claims and starts with the state machine's compare-and-set: the claim and start transitions, guarded by the execution", async () => {
    const s = await startExecServer(engine, { settings: { harnesses: [], defaultHarness: undefined } });
    try {
      const db = s.server.ctx.db;
      const runId = await createRun(s, { prompt: 'by hand', metadata: { k: 'v' } });
      const cancelled = await createRun(s, { prompt: 'cancelled first' });
      await s.api('POST', `/agent/runs/${cancelled}/cancel`);
      const before = (await s.api('GET', `/agent/runs/${runId}`)).body;
      const claimed = await claimRuns(
        db,
        undefined,
        { kind: 'service' },
        {
          limit: 10,
          harnesses: harnessChoice(['claude'], 'claude'),
          executor: 'service:test',
          leaseMs: 60_000,
        },
      );
      expect(claimed.map((c) => c.run.id)).toEqual([runId]);
      const c = claimed[0]!;
      expect(c).toMatchObject({
        attempt: 1,
        harness: 'claude',
        inputs: { previous: [], followups: [], attachments: [] },
      });
      expect(c.run).toMatchObject({
        id: runId,
        state: 'CLAIMED',
        execution_id: c.executionId,
        status_message: null,
        metadata: { k: 'v' },
      });
      expect(c.run.created_at).toBeInstanceOf(Date);
      expect(c.run.updated_at.getTime()).toBeGreaterThanOrEqual(new Date(before.updated_at).getTime());
      const recorder = s.parts.recorder;
      const start = { runId, workspace: '/w', leaseMs: 60_000, followupIds: [], where: 'test' };
      expect(await recorder.started({ ...start, executionId: 'exe_00000000000000000000000000' })).toBe(false);
      expect(await recorder.started({ ...start, executionId: c.executionId })).toBe(true);
      const run = (await s.api('GET', `/agent/runs/${runId}`)).body;
      expect(run).toMatchObject({
        state: 'INPROGRESS',
        status_message: { message: 'Running on test' },
        started_at: expect.any(String),
      });
      expect(await recorder.started({ ...start, executionId: c.executionId })).toBe(false);
      const states = (
        await db.query<{ data: { state: string } }>(
          `SELECT data FROM run_events WHERE run_id = $1 AND type = 'state' ORDER BY sequence`,
          [runId],
        )
      ).rows;
      expect(states.map((r) => r.data.state)).toEqual(['CLAIMED', 'INPROGRESS']);
      await recorder.finished({
        executionId: c.executionId,
        runId,
        outcome: { kind: 'succeeded', exitCode: 0, message: 'ok' },
      });
      expect((await s.api('GET', `/agent/runs/${runId}`)).body).toMatchObject({
        state: 'SUCCEEDED',
        status_message: { message: 'ok' },
      });
    } finally {
      await s.close();
    }
  });

  it('gives a claimed run that never started back to the queue when its lease expires', async () => {
    // this server's executors take nothing: the claim below is an executor that vanished before starting it
    const s = await startExecServer(engine, { settings: { harnesses: [], defaultHarness: undefined } });
    try {
      const runId = await createRun(s, { prompt: 'orphaned claim' });
      const claimed = await claimRuns(
        s.server.ctx.db,
        undefined,
        { kind: 'service' },
        {
          limit: 10,
          harnesses: harnessChoice(['claude'], 'claude'),
          executor: 'service:vanished',
          leaseMs: 1500,
        },
      );
      expect(claimed.map((c) => c.run.id)).toContain(runId);
      expect((await s.api('GET', `/agent/runs/${runId}`)).body.state).toBe('CLAIMED');
      // the reaper gives it back (the engine's `queued` step), saying why
      await waitForRun(s.server.ctx.bus, runId, (e) => e.event === 'queued', {
        current: async () => (await s.api('GET', `/agent/runs/${runId}`)).body.state,
      });
      expect((await s.api('GET', `/agent/runs/${runId}`)).body.state).toBe('QUEUED');
      // the message it was given back with (the run's own may already say what it waits for now)
      const back = (await eventsOf(s, runId)).find((e) => e.type === 'state' && e.data.previous === 'CLAIMED');
      expect(back?.data).toMatchObject({ state: 'QUEUED' });
      expect(back?.data.status_message.message).toMatch(/^Back in the queue/);
      expect(back?.data.status_message.message).toContain('service:vanished');
      expect((await executionsOf(s, runId))[0]).toMatchObject({ outcome: 'released', started_at: null });
    } finally {
      await s.close();
    }
  });

  // In the bubblewrap sandbox the workspace is a tmpfs of the limit: the write fails at once (no measurement to wait for)
  it('stops an agent whose workspace grows past the limit, and sweeps finished workspaces', async () => {
    const s = await startExecServer(engine, { settings: { workspaceMaxBytes: 1024 * 1024, workspaceRetentionMs: 0 } });
    try {
      await s.api('PUT', '/secrets/key', { value: 'sk-dispatch-0123456789' });
      const runId = await createRun(s, {
        prompt: 'BIG_FILE 3',
        config: { harness_auth_secrets: { claude_auth_secret_name: 'key' } },
      });
      const run = await waitForState(s, runId, ['ERROR', 'FAILED', 'SUCCEEDED']);
      // the agent's doing: FAILED, as for every limit of an execution
      expect(run.state).toBe('FAILED');
      expect(run.status_message.error_detail).toBe('workspace_too_large');
      const [execution] = await executionsOf(s, runId);
      expect(existsSync(execution!.workspace!)).toBe(true);
      const removed = await s.parts.sweeper.sweep();
      expect(removed).toContain(execution!.id);
      expect(existsSync(execution!.workspace!)).toBe(false);
    } finally {
      await s.close();
    }
  });
});

describe.skipIf(!ENGINES.includes('postgres'))('two servers on one postgres database', () => {
  let database: TestDatabase;
  let one: ExecServer;
  let two: ExecServer;
  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    const settings = { concurrency: 3, harnesses: ['noop' as const], defaultHarness: 'noop' as const };
    one = await startExecServer('postgres', { database, settings });
    two = await startExecServer('postgres', { database, settings });
  });
  afterAll(async () => {
    await one?.close();
    await two?.close();
    await database?.close();
  });

  it('gives every run to exactly one executor', async () => {
    const ids = await Promise.all(
      Array.from({ length: 40 }, (_, i) => createRun(i % 2 ? one : two, { prompt: `run ${i}` })),
    );
    await whenRunsTold(one, 'every run to finish', async () => {
      const res = await one.server.ctx.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM runs WHERE id = ANY($1::text[]) AND state = 'SUCCEEDED'`,
        [ids],
      );
      return res.rows[0]!.n === ids.length;
    });
    const executions = await one.server.ctx.db.query<{ run_id: string; executor: string }>(
      'SELECT run_id, executor FROM executions WHERE run_id = ANY($1::text[])',
      [ids],
    );
    expect(executions.rowCount).toBe(ids.length);
    expect(new Set(executions.rows.map((e) => e.run_id)).size).toBe(ids.length);
    expect(new Set(executions.rows.map((e) => e.executor)).size).toBe(2);
  });
});
