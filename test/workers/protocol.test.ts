/**
 * The worker protocol on the wire, with a raw WebSocket client: authentication, version check, hello and
 * welcome, an assignment rejected at capacity (the run goes back to the queue), claimed/event/completed
 * frames driving the run's states; and a worker process that reconnects after its server restarts and
 * finishes its run on the new connection.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, ENGINES } from '../support/db.ts';
import { freePort } from '../support/postgres-server.ts';
import { spawnAgentyard } from '../support/agentyard-process.ts';
import {
  createRun,
  eventsOf,
  executionsOf,
  FAKE,
  startExecServer,
  whenRunsTold,
  waitForState,
  liveWorkspace,
} from '../execution/support.ts';
import type { ExecServer } from '../execution/support.ts';
import { connect, hello } from './support.ts';
import type { Client } from './support.ts';

describe.each(ENGINES)('the worker protocol on %s', (engine) => {
  let s: ExecServer;
  let key: string;
  beforeAll(async () => {
    s = await startExecServer(engine, { settings: { harnesses: [], defaultHarness: undefined } });
    // a team admin's key both connects the worker and creates the runs (worker tokens: worker-auth.test.ts)
    key = (await s.api('POST', '/api-keys', { name: 'raw worker', role: 'admin' })).body.key;
  });
  afterAll(async () => {
    await s?.close();
  });

  it('refuses connections without a valid key, and a protocol it does not speak', async () => {
    expect(await connect(s, undefined)).toEqual({ status: 401 });
    expect(await connect(s, 'ayk_not-a-key')).toEqual({ status: 401 });
    const member = (
      await s.api('POST', '/api-keys', {
        name: 'member user',
        role: 'member',
        principal_id: (await s.api('GET', '/whoami')).body.principal.uid,
      })
    ).body.key;
    expect(await connect(s, member)).toEqual({ status: 403 });
    const c = (await connect(s, key)) as Client;
    c.send({ ...hello('box-v9'), protocol: 9 });
    expect(await c.next('error')).toMatchObject({ code: 'protocol_mismatch' });
    expect((await c.closed).code).toBe(4400);
  });

  it('never tells a worker to cancel an execution it reported the end of, even when a heartbeat check races the end', async () => {
    const c = (await connect(s, key)) as Client;
    c.send(hello('racer-1'));
    await c.next('welcome');
    for (let i = 0; i < 8; i++) {
      const runId = await createRun(s, { prompt: `race ${i}`, config: { worker_host: 'racer-1' } }, key);
      const a = await c.next('assignment');
      c.send({ type: 'claimed', execution_id: a.execution_id, workspace: `/w/race-${i}` });
      await waitForState(s, runId, ['INPROGRESS'], 10_000, key);
      // the worker's heartbeat still lists the execution it is about to report finished
      c.send({ type: 'heartbeat', load: 1, running: [a.execution_id] });
      c.send({ type: 'completed', execution_id: a.execution_id, exit_code: 0, message: 'done' });
      await waitForState(s, runId, ['SUCCEEDED'], 10_000, key);
    }
    // a last heartbeat round trip, so that any cancel sent for the races above has arrived
    c.send({ type: 'heartbeat', load: 0, running: [] });
    await new Promise((r) => setTimeout(r, 300));
    expect(c.messages.filter((m) => m.type === 'cancel')).toEqual([]);
    c.ws.close();
  });

  it('welcomes a worker, and a run it rejects at capacity goes back to the queue', async () => {
    const c = (await connect(s, key)) as Client;
    c.send(hello('raw-1'));
    const welcome = await c.next('welcome');
    expect(welcome).toMatchObject({
      protocol: 1,
      connection_id: expect.stringMatching(/^wrk_/),
      heartbeat_ms: 300,
      lease_ms: 3000,
      stale: [],
    });
    const runId = await createRun(s, { prompt: 'reject me', config: { worker_host: 'raw-1' } }, key);
    const assignment = await c.next('assignment');
    expect(assignment.plan).toMatchObject({
      runId,
      harness: 'command',
      prompt: 'reject me',
      executionId: assignment.execution_id,
    });
    expect((await s.api('GET', `/agent/runs/${runId}`, undefined, key)).body.state).toBe('CLAIMED');
    c.send({ type: 'rejected', execution_id: assignment.execution_id, reason: 'at_capacity' });
    const back = await waitForState(s, runId, ['QUEUED'], 10_000, key);
    expect(back.status_message.message).toContain('rejected it (at_capacity)');
    expect((await executionsOf(s, runId))[0]).toMatchObject({ outcome: 'released' });

    // offered again once the pause is over: this time the worker takes it
    const again = await c.next('assignment');
    expect(again.plan.runId).toBe(runId);
    expect(again.execution_id).not.toBe(assignment.execution_id);
    c.send({ type: 'claimed', execution_id: again.execution_id, workspace: '/w/1' });
    await waitForState(s, runId, ['INPROGRESS'], 10_000, key);
    c.send({ type: 'heartbeat', load: 1, running: [again.execution_id] });
    c.send({
      type: 'event',
      execution_id: again.execution_id,
      events: [{ type: 'message', data: { role: 'assistant', text: 'hello from the wire' } }],
    });
    c.send({
      type: 'completed',
      execution_id: again.execution_id,
      exit_code: 0,
      message: 'done on the wire',
      agent_session_id: 'sess-1',
    });
    const run = await waitForState(s, runId, ['SUCCEEDED'], 10_000, key);
    expect(run.status_message.message).toBe('done on the wire');
    expect((await eventsOf(s, runId)).find((e) => e.type === 'message')!.data.text).toBe('hello from the wire');
    expect((await executionsOf(s, runId))[1]).toMatchObject({
      outcome: 'succeeded',
      exit_code: 0,
      agent_session_id: 'sess-1',
      workspace: '/w/1',
    });

    // a cancelled run is cancelled on the worker
    const second = await createRun(s, { prompt: 'cancel me', config: { worker_host: 'raw-1' } }, key);
    const a2 = await c.next('assignment');
    c.send({ type: 'claimed', execution_id: a2.execution_id, workspace: '/w/2' });
    await waitForState(s, second, ['INPROGRESS'], 10_000, key);
    await s.api('POST', `/agent/runs/${second}/cancel`, undefined, key);
    expect(await c.next('cancel')).toEqual({ type: 'cancel', execution_id: a2.execution_id, reason: 'cancelled' });
    c.send({ type: 'failed', execution_id: a2.execution_id, outcome: 'cancelled', reason: 'stopped', exit_code: null });
    await whenRunsTold(
      s,
      'the execution to end',
      async () => (await executionsOf(s, second))[0]!.outcome === 'cancelled',
    );
    c.ws.close();
  });
});

describe.each(ENGINES)('a worker process across a server restart on %s', (engine) => {
  it('reconnects with backoff and reports on the new connection a run still going and one that ended meanwhile', async () => {
    const database = await createTestDatabase(engine);
    const port = await freePort();
    // The runs survive the restart only if the worker reports back within their lease: a loaded machine can take
    // several seconds to restart the server and reconnect, longer than the 3 s lease of the other tests.
    const settings = { harnesses: [] as [], defaultHarness: undefined, leaseMs: 30_000 };
    let s = await startExecServer(engine, { database, settings, config: { port } });
    const key = (await s.api('POST', '/api-keys', { name: 'worker', role: 'admin' })).body.key as string;
    const worker = spawnAgentyard(
      [
        'worker',
        '--worker-id',
        'phoenix',
        '--server',
        s.url,
        '--api-key',
        key,
        '--capacity',
        '2',
        '--harnesses',
        'command',
      ],
      {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        AGENTYARD_HARNESS_COMMAND_BIN: FAKE.command,
      },
    );
    try {
      const going = await createRun(
        s,
        { prompt: 'still going UNTIL released', config: { worker_host: 'phoenix' } },
        key,
      );
      const ended = await createRun(
        s,
        { prompt: 'ends meanwhile UNTIL released', config: { worker_host: 'phoenix' } },
        key,
      );
      // Each agent waits for a file in its workspace, so the test decides when it ends.
      const workspaces = new Map<string, string>();
      for (const runId of [going, ended]) {
        await waitForState(s, runId, ['INPROGRESS'], 20_000, key);
        workspaces.set(runId, (await executionsOf(s, runId))[0]!.workspace!);
      }
      const release = (runId: string) =>
        writeFileSync(path.join(liveWorkspace(workspaces.get(runId)!), 'released'), '');
      await s.close();
      await worker.printed(/disconnected \(1001/, 'the worker to see the server go', 20_000);
      release(ended);
      await worker.printed(
        new RegExp(`finished ${ended}: succeeded`),
        'the worker to finish a run while it has no server',
        20_000,
      );
      s = await startExecServer(engine, { database, settings, config: { port } });
      await worker.printed(/(connected to [^\n]*[\s\S]*){2}/, 'the worker to reconnect', 20_000);
      release(going);
      for (const runId of [going, ended]) {
        const run = await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR'], 20_000, key);
        expect(run.state, worker.output()).toBe('SUCCEEDED');
        const executions = await executionsOf(s, runId);
        expect(executions).toHaveLength(1);
        expect(executions[0]!.outcome).toBe('succeeded');
      }
      expect(worker.output()).toMatch(/reconnecting in \d+ ms/);
    } finally {
      await worker.stop();
      await s.close();
      await database.close();
    }
  });
});
