/**
 * Direct hand-off: a run created in a process whose executors have a free slot is claimed in the statement
 * that inserts it, through the state machine (its QUEUED → CLAIMED state event, an execution with its lease),
 * fair between teams (the claim may take an older run of another team first), and a run the executors cannot
 * take stays queued and announced. The statement inserts every column the usual insert does.
 * Each test's steps run under a Deadline (test/support/deadline.ts): a step that hangs fails saying what it
 * waited for.
 */
import { RUNS_QUEUED_TOPIC } from '../../src/kernel/topics.ts';
import { describe, expect, it } from 'vitest';
import { insertsHandOffColumns } from '../../src/engine/hand-off.ts';
import { createAndClaimServiceRuns } from '../../src/engine/claim.ts';
import { harnessChoice } from '../../src/execution/settings.ts';
import { prepareQueuedRun } from '../../src/runs/service.ts';
import { ENGINES } from '../support/db.ts';
import { eventsOf, executionsOf, startExecServer, waitForState } from '../execution/support.ts';
import type { ExecServer } from '../execution/support.ts';
import { inState, waitForRun } from '../support/run-events.ts';
import { Deadline, closeWithin } from '../support/deadline.ts';
import { insertRunsParameter } from '../../src/engine/engine.ts';
import { insertRuns } from '../../src/engine/engine.ts';

async function teamIdOf(s: ExecServer): Promise<string> {
  return (await s.api('GET', '/whoami')).body.team.id;
}

describe.each(ENGINES)('direct hand-off on %s', (engine) => {
  it('claims a run in the statement that creates it: never seen QUEUED, the claim recorded as a state event', async () => {
    const d = new Deadline();
    const s = await d.step(
      'the server to start',
      startExecServer(engine, {
        settings: { concurrency: 2, harnesses: ['noop'], defaultHarness: 'noop', pollMs: 60_000 },
      }),
    );
    try {
      const service = s.server.services.runs;
      const teamId = await d.step('GET /whoami', teamIdOf(s));
      const { run } = await d.step(
        'the hand-off to create and claim the run',
        service.create({ teamId, prompt: 'handed off', source: 'API', creator: null }),
      );
      // the creator is told the state that committed
      expect(run.state).toBe('CLAIMED');
      // committed together with its claim: no poll (60 s) and no wake-up needed
      const row = (
        await d.step(
          'the run row',
          s.server.ctx.db.query<{ state: string; execution_id: string }>(
            'SELECT state, execution_id FROM runs WHERE id = $1',
            [run.id],
          ),
        )
      ).rows[0]!;
      expect(row.state).not.toBe('QUEUED');
      const [execution] = await d.step('the executions of the run', executionsOf(s, run.id));
      expect(execution).toMatchObject({
        id: row.execution_id,
        attempt: 1,
        harness: 'noop',
        executor: `service:${s.parts.processId}`,
      });
      await waitForState(s, run.id, ['SUCCEEDED'], d.remaining());
      const states = (await d.step('the events of the run', eventsOf(s, run.id)))
        .filter((e) => e.type === 'state')
        .map((e) => [e.data.previous, e.data.state]);
      expect(states).toEqual([
        ['QUEUED', 'CLAIMED'],
        ['CLAIMED', 'INPROGRESS'],
        ['INPROGRESS', 'SUCCEEDED'],
      ]);
    } finally {
      await closeWithin(s);
    }
  });

  it('claims fairly: with another team waiting, the new run waits for its turn', async () => {
    const d = new Deadline();
    const s = await d.step(
      'the server to start',
      startExecServer(engine, {
        settings: { concurrency: 1, harnesses: ['noop'], defaultHarness: 'noop', pollMs: 60_000 },
      }),
    );
    try {
      const db = s.server.ctx.db;
      const teamA = await d.step('GET /whoami', teamIdOf(s));
      const teamB = (await d.step('POST /teams', s.api('POST', '/teams', { name: 'team-b' }))).body.team.id as string;
      // team A's runs queued without a wake-up (and the poll is a minute away): the executor's slot is free
      const queued = await d.step(
        'the queued runs of team A',
        db.transaction(async (tx) => {
          const ids: string[] = [];
          for (let i = 0; i < 3; i++)
            ids.push(
              (
                await s.server.services.runs.create(
                  { teamId: teamA, prompt: `A${i}`, source: 'API', creator: null },
                  { within: tx },
                )
              ).run.id,
            );
          return ids;
        }),
      );
      const announced: unknown[] = [];
      const unsubscribe = s.server.ctx.bus.subscribe(RUNS_QUEUED_TOPIC, (data) => announced.push(data));
      const { run } = await d.step(
        "the hand-off of team B's run",
        s.server.services.runs.create({ teamId: teamB, prompt: 'B0', source: 'API', creator: null }),
      );
      unsubscribe();
      expect(run.state).toBe('QUEUED');
      // the statement took the fairest run, A0 (older, neither team served yet); B0 stays queued and is announced
      const a0 = (
        await d.step(
          'the state of A0',
          db.query<{ state: string }>('SELECT state FROM runs WHERE id = $1', [queued[0]!]),
        )
      ).rows[0]!;
      expect(a0.state).not.toBe('QUEUED');
      expect(announced).toContainEqual({ run_id: run.id, worker_host: null });
      const ids = [...queued, run.id];
      // (the runs are of two teams: their states are read from the database, not through one team's key)
      const stateOf = async (id: string) =>
        (await db.query<{ state: string }>('SELECT state FROM runs WHERE id = $1', [id])).rows[0]?.state;
      await Promise.all(
        ids.map((id) =>
          waitForRun(s.server.ctx.bus, id, inState('SUCCEEDED'), {
            current: () => stateOf(id),
            timeoutMs: d.remaining(),
          }),
        ),
      );
      const order = await d.step(
        'the order of the claims',
        db.query<{ prompt: string }>(
          `SELECT r.prompt FROM executions e JOIN runs r ON r.id = e.run_id WHERE e.run_id = ANY($1::text[]) ORDER BY e.claimed_at, e.id`,
          [ids],
        ),
      );
      expect(order.rows.map((r) => r.prompt)).toEqual(['A0', 'B0', 'A1', 'A2']);
    } finally {
      await closeWithin(s);
    }
  });

  it('leaves a run its executors do not take queued, and announces it', async () => {
    const d = new Deadline();
    const s = await d.step(
      'the server to start',
      startExecServer(engine, {
        settings: { concurrency: 2, harnesses: ['noop'], defaultHarness: 'noop', pollMs: 60_000 },
      }),
    );
    try {
      const teamId = await d.step('GET /whoami', teamIdOf(s));
      const announced: unknown[] = [];
      const unsubscribe = s.server.ctx.bus.subscribe(RUNS_QUEUED_TOPIC, (data) => announced.push(data));
      const service = s.server.services.runs;
      const { run } = await d.step(
        'the creation of a run no executor takes',
        service.create({
          teamId,
          prompt: 'codex only',
          config: { harness: { type: 'codex' } },
          source: 'API',
          creator: null,
        }),
      );
      unsubscribe();
      expect(run.state).toBe('QUEUED');
      expect(announced).toContainEqual({ run_id: run.id, worker_host: null });
      expect((await d.step('GET the run', s.api('GET', `/agent/runs/${run.id}`))).body.state).toBe('QUEUED');
      expect(await d.step('the executions of the run', executionsOf(s, run.id))).toEqual([]);
    } finally {
      await closeWithin(s);
    }
  });

  it('inserts every column the usual insert does', async () => {
    // the hand-off is on only while insertRuns writes the columns its statement lists
    expect(insertsHandOffColumns()).toBe(true);
    // no executors here: both rows stay as inserted
    const d = new Deadline();
    const s = await d.step(
      'the server to start',
      startExecServer(engine, { settings: { harnesses: [], defaultHarness: undefined } }),
    );
    try {
      const db = s.server.ctx.db;
      const teamId = await d.step('GET /whoami', teamIdOf(s));
      const input = {
        teamId,
        prompt: 'every column\nsecond line',
        title: 'A title',
        config: {
          name: 'cfg',
          model_id: 'm-1',
          environment_id: 'env-1',
          skill_spec: 'acme/repo:skill',
          base_prompt: 'base',
          worker_host: 'service',
        },
        source: 'API' as const,
        creator: { id: 'usr_1', type: 'user' as const, displayName: 'Ada', email: 'ada@example.com' },
        metadata: { k: 'v' },
      };
      const usual = await d.step('a run prepared', prepareQueuedRun(db, input));
      const handedOff = await d.step('a run prepared', prepareQueuedRun(db, input));
      await d.step('the usual insert', insertRuns(db, [usual]));
      const claimed = await d.step(
        'the hand-off statement',
        createAndClaimServiceRuns(db, undefined, insertRunsParameter([handedOff]), {
          limit: 0,
          harnesses: harnessChoice(['noop'], 'noop'),
          executor: 'service:test',
          leaseMs: 30_000,
        }),
      );
      expect(claimed).toEqual([]);
      const rows = (
        await d.step(
          'the two rows',
          db.query<Record<string, unknown>>('SELECT * FROM runs WHERE id = ANY($1::text[])', [
            [usual.id, handedOff.id],
          ]),
        )
      ).rows;
      const strip = (r: Record<string, unknown>) => {
        const { id: _id, session_id: _session, created_at: _created, updated_at: _updated, ...rest } = r;
        return rest;
      };
      expect(rows).toHaveLength(2);
      expect(strip(rows.find((r) => r.id === handedOff.id)!)).toEqual(strip(rows.find((r) => r.id === usual.id)!));
      expect(rows[0]).toMatchObject({
        config_name: 'cfg',
        model_id: 'm-1',
        creator_email: 'ada@example.com',
        state: 'QUEUED',
      });
    } finally {
      await closeWithin(s);
    }
  });
});
