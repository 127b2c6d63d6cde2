/**
 * The end of executions (ExecutionRecorder.finished, one ay_end_executions call per batch): ends of the same
 * moment written together with an answer each, runs moved by the state machine's transition for their
 * outcome and only while it allows it, usage added, an execution that lost its lease or is no longer the
 * run's current one changing nothing of the run, and a follow-up that arrived while the execution ran queueing
 * the run again. The executors of this server take nothing: the tests claim and start runs themselves.
 */
import { RUNS_QUEUED_TOPIC, RUN_EVENTS_TOPIC } from '../../src/kernel/topics.ts';
import type { Topic } from '../../src/kernel/topics.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimRuns } from '../../src/engine/claim.ts';
import { harnessChoice } from '../../src/execution/settings.ts';
import type { FinishInput } from '../../src/execution/recorder.ts';
import { transitionFor } from '../../src/engine/state-machine.ts';
import { ENGINES } from '../support/db.ts';
import { createRun, eventsOf, executionsOf, startExecServer } from '../execution/support.ts';
import { pollUntil } from '../support/signals.ts';
import type { ExecServer } from '../execution/support.ts';
import { closeWithin, within } from '../support/deadline.ts';

describe.each(ENGINES)('ends of executions on %s', (engine) => {
  let s: ExecServer;
  beforeAll(async () => {
    s = await within(
      'the server to start',
      startExecServer(engine, { settings: { harnesses: [], defaultHarness: undefined } }),
      60_000,
    );
  });
  afterAll(async () => {
    if (s) await closeWithin(s, 30_000);
  });

  const create = async (prompts: string[]) => {
    const ids: string[] = [];
    for (const prompt of prompts) ids.push(await createRun(s, { prompt }));
    return ids;
  };

  /** Claims the queued runs `ids` as an executor of this test would, and starts them: run id → execution id. */
  async function running(
    ids: string[],
    options: { leaseMs?: number; followupIds?: Record<string, string[]> } = {},
  ): Promise<Map<string, string>> {
    const claimed = await claimRuns(
      s.server.ctx.db,
      undefined,
      { kind: 'service' },
      {
        limit: 50,
        harnesses: harnessChoice(['claude'], 'claude'),
        executor: 'service:test',
        leaseMs: 60_000,
      },
    );
    const executions = new Map(claimed.map((c) => [c.run.id, c.executionId]));
    expect([...executions.keys()].sort()).toEqual([...ids].sort());
    for (const [runId, executionId] of executions) {
      const started = await s.parts.recorder.started({
        executionId,
        runId,
        workspace: `/w/${runId}`,
        leaseMs: options.leaseMs ?? 60_000,
        followupIds: options.followupIds?.[runId] ?? [],
        where: 'test',
      });
      expect(started).toBe(true);
    }
    return executions;
  }

  const run = async (id: string) => (await s.api('GET', `/agent/runs/${id}`)).body;
  const states = async (id: string) =>
    (await eventsOf(s, id)).filter((e) => e.type === 'state').map((e) => e.data.state as string);

  function listen(topic: Topic): unknown[] {
    const seen: unknown[] = [];
    s.server.ctx.bus.subscribe(topic, (data) => seen.push(data));
    return seen;
  }

  it('ends a batch in one call, each run by the transition of its outcome, and answers each end', async () => {
    const [ok, failed, broken, cancelled, lost] = ['ok', 'failed', 'broken', 'cancelled meanwhile', 'lost'];
    const executions = await running(await create([ok, failed, broken, cancelled, lost].map((p) => `batch: ${p}`)));
    const byPrompt = new Map<string, [string, string]>();
    for (const [runId, executionId] of executions)
      byPrompt.set((await run(runId)).prompt.replace('batch: ', ''), [runId, executionId]);
    const [okRun, okExe] = byPrompt.get(ok)!;
    const [cancelledRun] = byPrompt.get(cancelled)!;
    await s.server.ctx.db.query(
      `UPDATE runs SET request_usage = '{"input_tokens": 10, "cache_read_tokens": 4}'::jsonb WHERE id = $1`,
      [okRun],
    );
    expect((await s.api('POST', `/agent/runs/${cancelledRun}/cancel`)).status).toBe(200);
    const announced = listen(RUN_EVENTS_TOPIC);

    const end = (p: string, outcome: FinishInput['outcome'], usage?: FinishInput['usage']): FinishInput => {
      const [runId, executionId] = byPrompt.get(p)!;
      return { runId, executionId, outcome, ...(usage ? { usage } : {}) };
    };
    // the same turn: one batch
    const answers = await Promise.all(
      [
        end(
          ok,
          { kind: 'succeeded', exitCode: 0, message: 'done', agentSessionId: 'sess-ok', workspace: '/w/moved' },
          { input_tokens: 5, output_tokens: 7, cost_usd: 0.25 },
        ),
        end(failed, { kind: 'failed', exitCode: 3, message: 'tests fail', errorCode: 'agent_failed' }),
        end(broken, { kind: 'error', exitCode: null, message: 'no sandbox', errorCode: 'environment_setup_failed' }),
        end(cancelled, { kind: 'succeeded', exitCode: 0, message: 'finished before it heard' }),
        end(lost, { kind: 'lost', exitCode: null, message: 'the process vanished' }),
      ].map((i) => s.parts.recorder.finished(i)),
    );

    expect(answers.map((a) => a?.state)).toEqual([
      transitionFor('succeed').to,
      transitionFor('fail').to,
      transitionFor('error').to,
      undefined,
      undefined,
    ]);
    expect(answers[0]).toMatchObject({
      id: okRun,
      status_message: { message: 'done' },
      request_usage: {
        input_tokens: 15,
        output_tokens: 7,
        total_tokens: 12,
        inference_cost_usd: 0.25,
        inference_cost: 0.25,
        cache_read_tokens: 4,
      },
    });
    expect(answers[0]!.finished_at).toBeInstanceOf(Date);
    expect(answers[0]!.updated_at).toBeInstanceOf(Date);
    expect(answers[1]!.status_message).toEqual({ message: 'tests fail', error_code: 'agent_failed' });
    expect(answers[2]!.status_message).toEqual({ message: 'no sandbox', error_code: 'environment_setup_failed' });

    expect(await run(okRun)).toMatchObject({
      state: 'SUCCEEDED',
      request_usage: { input_tokens: 15, total_tokens: 12 },
    });
    expect(await run(cancelledRun)).toMatchObject({ state: 'CANCELLED' });
    expect((await run(byPrompt.get(lost)![0])).state).toBe('INPROGRESS');
    // every execution ended with its own outcome, whether its run moved or not
    const ended = Object.fromEntries(
      await Promise.all([...byPrompt].map(async ([p, [runId]]) => [p, (await executionsOf(s, runId))[0]!] as const)),
    );
    expect(ended[ok]).toMatchObject({
      id: okExe,
      outcome: 'succeeded',
      exit_code: 0,
      agent_session_id: 'sess-ok',
      workspace: '/w/moved',
    });
    expect(ended[failed]).toMatchObject({
      outcome: 'failed',
      exit_code: 3,
      workspace: `/w/${byPrompt.get(failed)![0]}`,
    });
    expect(ended[cancelled]).toMatchObject({ outcome: 'succeeded' });
    expect(ended[lost]).toMatchObject({ outcome: 'lost' });
    for (const e of Object.values(ended)) expect(e.ended_at).toBeInstanceOf(Date);
    // the trigger's state events: one per run that moved
    expect(await states(okRun)).toEqual(['CLAIMED', 'INPROGRESS', 'SUCCEEDED']);
    expect(await states(cancelledRun)).toEqual(['CLAIMED', 'INPROGRESS', 'CANCELLED']);
    // the runs that moved announced, together
    const moved = [ok, failed, broken].map((p) => byPrompt.get(p)![0]).sort();
    expect(announced.flatMap((m) => (m as { run_ids: string[] }).run_ids).sort()).toEqual(moved);
  });

  it('changes nothing of a run whose execution lost its lease, nor of one whose current execution is another', async () => {
    const [runId, first] = [...(await running(await create(['lease lost']), { leaseMs: 1 }))][0]!;
    // a lease expires by the clock alone: nothing tells it, so the reaper is asked until it has
    await pollUntil(
      async () =>
        (await s.parts.reaper.reapExpiredLeases()) > 0 || (await executionsOf(s, runId!))[0]!.ended_at !== null,
      { what: 'the reaper to end the execution (its 1 ms lease expired)' },
    );
    const afterReaper = await run(runId!);
    expect(afterReaper).toMatchObject({ state: 'ERROR', status_message: { error_detail: 'lease_expired' } });
    expect(
      await s.parts.recorder.finished({
        runId: runId!,
        executionId: first!,
        outcome: { kind: 'succeeded', exitCode: 0, message: 'late' },
      }),
    ).toBeUndefined();
    expect(await run(runId!)).toEqual(afterReaper);
    expect((await executionsOf(s, runId!))[0]).toMatchObject({ outcome: 'lost' });

    // a follow-up queues it again and a second execution takes it; the first, were it still running (not
    // ended, as an executor the reaper has not caught up with yet), ends without touching the run
    await s.api('POST', `/agent/runs/${runId}/followups`, { message: 'again' });
    const [second] = await claimRuns(
      s.server.ctx.db,
      undefined,
      { kind: 'service' },
      {
        limit: 5,
        harnesses: harnessChoice(['claude'], 'claude'),
        executor: 'service:test',
        leaseMs: 60_000,
      },
    );
    expect(second!.run.id).toBe(runId);
    // (with a live lease, or the service's own reaper may end it as lost before the executor reports)
    await s.server.ctx.db.query(
      "UPDATE executions SET ended_at = NULL, outcome = NULL, lease_expires_at = now() + interval '1 hour' WHERE id = $1",
      [first],
    );
    // run_time counts the whole seconds of a run still going: it may tick between two reads
    const stored = async (id: string) => {
      const { run_time: _runTime, ...rest } = await run(id);
      return rest;
    };
    const before = await stored(runId!);
    const events = await eventsOf(s, runId!);
    expect(
      await s.parts.recorder.finished({
        runId: runId!,
        executionId: first!,
        outcome: { kind: 'failed', exitCode: 1, message: 'zombie' },
      }),
    ).toBeUndefined();
    expect(await stored(runId!)).toEqual(before);
    expect(await eventsOf(s, runId!)).toEqual(events);
    expect((await executionsOf(s, runId!))[0]).toMatchObject({ id: first, outcome: 'failed' });
    // the current one still ends it (once started, with the follow-up in its prompt consumed)
    const start = {
      runId: runId!,
      executionId: second!.executionId,
      workspace: '/w/2',
      leaseMs: 60_000,
      where: 'test',
    };
    expect(await s.parts.recorder.started({ ...start, followupIds: second!.inputs.followups.map((f) => f.id) })).toBe(
      true,
    );
    expect(
      await s.parts.recorder.finished({
        runId: runId!,
        executionId: second!.executionId,
        outcome: { kind: 'succeeded', exitCode: 0, message: 'ok' },
      }),
    ).toMatchObject({
      state: 'SUCCEEDED',
    });
  });

  it('queues a run again when a follow-up arrived after its execution last looked, not for one it consumed', async () => {
    const [consumedRun, waitingRun] = (await create(['follow-up in the prompt', 'follow-up while running'])) as [
      string,
      string,
    ];
    const followup = (await s.api('POST', `/agent/runs/${consumedRun}/followups`, { message: 'in the prompt' })).body;
    expect(followup.state).toBe('QUEUED');
    const executions = await running([consumedRun, waitingRun], {
      followupIds: { [consumedRun]: [followup.followup_id] },
    });
    expect((await s.api('POST', `/agent/runs/${waitingRun}/followups`, { message: 'one more thing' })).body.state).toBe(
      'INPROGRESS',
    );
    const queued = listen(RUNS_QUEUED_TOPIC);

    const [requeued, done] = await Promise.all(
      [waitingRun, consumedRun].map((runId) =>
        s.parts.recorder.finished({
          runId,
          executionId: executions.get(runId)!,
          outcome: { kind: 'succeeded', exitCode: 0, message: 'done' },
        }),
      ),
    );
    expect(requeued).toMatchObject({
      id: waitingRun,
      state: transitionFor('continue').to,
      status_message: null,
      finished_at: null,
    });
    expect(done).toMatchObject({ id: consumedRun, state: 'SUCCEEDED' });
    expect(queued).toEqual([{ run_id: waitingRun, worker_host: null }]);
    expect(await states(waitingRun)).toEqual(['CLAIMED', 'INPROGRESS', 'SUCCEEDED', 'QUEUED']);
    expect(await states(consumedRun)).toEqual(['CLAIMED', 'INPROGRESS', 'SUCCEEDED']);
    expect((await executionsOf(s, waitingRun))[0]).toMatchObject({ outcome: 'succeeded' });
  });
});
