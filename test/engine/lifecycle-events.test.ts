/**
 * The engine tells each step of a run's life on the bus (`runs.lifecycle`, in the process that wrote it):
 * created, claimed, started and finished with the state it left, for a run the executors take; queued and
 * finished (CANCELLED) for runs moved by the Run API; and `waitForRun` resolves on them, or at once for a run
 * already in the awaited state.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RUN_LIFECYCLE_TOPIC } from '../../src/kernel/topics.ts';
import type { RunLifecycleEvent } from '../../src/kernel/topics.ts';
import { ENGINES } from '../support/db.ts';
import { inState, waitForCreatedRun, waitForRun } from '../support/run-events.ts';
import { createRun, startExecServer } from '../execution/support.ts';
import { Deadline, closeWithin, within } from '../support/deadline.ts';
import type { ExecServer } from '../execution/support.ts';

describe.each(ENGINES)('run lifecycle steps on %s', (engine) => {
  let s: ExecServer;
  let idle: ExecServer;
  const steps: RunLifecycleEvent[] = [];
  beforeAll(async () => {
    s = await within(
      'the server to start',
      startExecServer(engine, { settings: { concurrency: 2, harnesses: ['noop'], defaultHarness: 'noop' } }),
      60_000,
    );
    s.server.ctx.bus.subscribe(RUN_LIFECYCLE_TOPIC, (e) => steps.push(e));
  });
  afterAll(async () => {
    if (s) await closeWithin(s, 30_000);
    if (idle) await closeWithin(idle, 30_000);
  });

  const stepsOf = (runId: string) => steps.filter((e) => e.run_id === runId).map((e) => `${e.event}:${e.state}`);

  it('tells a run created, claimed, started and finished, in that order', async () => {
    const d = new Deadline();
    const created = waitForCreatedRun(s.server.ctx.bus, async () => steps.find((e) => e.event === 'created')?.run_id, {
      timeoutMs: d.remaining(),
    });
    const runId = await d.step('POST /agent/runs', createRun(s, { prompt: 'steps' }));
    expect(await created).toBe(runId);
    const finished = await waitForRun(s.server.ctx.bus, runId, (e) => e.event === 'finished', {
      current: async () => (await s.api('GET', `/agent/runs/${runId}`)).body.state,
      timeoutMs: d.remaining(),
    });
    expect(finished.state).toBe('SUCCEEDED');
    expect((await d.step('GET the run', s.api('GET', `/agent/runs/${runId}`))).body.state).toBe('SUCCEEDED');
    // the state read at the start may already be the end (noop finishes fast): then the steps were all told
    expect(stepsOf(runId)).toEqual(['created:QUEUED', 'claimed:CLAIMED', 'started:INPROGRESS', 'finished:SUCCEEDED']);
  });

  it('tells a follow-up that queues a finished run again, and resolves at once for a state already reached', async () => {
    const d = new Deadline();
    const runId = await d.step('POST /agent/runs', createRun(s, { prompt: 'again' }));
    await waitForRun(s.server.ctx.bus, runId, inState('SUCCEEDED'), {
      current: async () => (await s.api('GET', `/agent/runs/${runId}`)).body.state,
      timeoutMs: d.remaining(),
    });
    const followup = await d.step(
      'POST a follow-up',
      s.api('POST', `/agent/runs/${runId}/followups`, { message: 'more' }),
    );
    expect(followup.status).toBe(200);
    await waitForRun(s.server.ctx.bus, runId, (e) => e.event === 'finished' && stepsOf(runId).length > 4, {
      timeoutMs: d.remaining(),
    });
    expect(stepsOf(runId).slice(4, 5)).toEqual(['queued:QUEUED']);
    expect(stepsOf(runId).at(-1)).toBe('finished:SUCCEEDED');
    // already SUCCEEDED: the current state answers, no step needed
    const now = await waitForRun(s.server.ctx.bus, runId, inState('SUCCEEDED'), {
      current: async () => 'SUCCEEDED',
      timeoutMs: 1_000,
    });
    expect(now).toEqual({ run_id: runId, event: 'finished', state: 'SUCCEEDED' });
  });

  it('tells a cancel of a queued run finished, CANCELLED', async () => {
    const d = new Deadline();
    // a server whose executors take nothing: the run stays queued until the cancel
    idle = await d.step(
      'the second server to start',
      startExecServer(engine, { settings: { harnesses: [], defaultHarness: undefined } }),
    );
    const runId = await d.step('POST /agent/runs', createRun(idle, { prompt: 'cancel me' }));
    const cancelled = waitForRun(idle.server.ctx.bus, runId, (e) => e.event === 'finished', {
      timeoutMs: d.remaining(),
    });
    expect((await d.step('the cancel', idle.api('POST', `/agent/runs/${runId}/cancel`))).status).toBe(200);
    expect(await cancelled).toEqual({ run_id: runId, event: 'finished', state: 'CANCELLED' });
  });

  it('fails a wait that never comes with what it waited for', async () => {
    await expect(waitForRun(s.server.ctx.bus, 'run_never', () => true, { timeoutMs: 50 })).rejects.toThrow(/run_never/);
  });
});
