/**
 * Self-hosted workers as real processes (`node bin/agentyard.js worker …`) connected over a WebSocket to a
 * real server: runs whose worker_host names them execute there; a run for a worker that is not connected
 * waits and says so; capacity is respected; cancellation reaches the worker's agent; `kill -9` of a worker
 * mid-run ends the run ERROR once its lease expires.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { spawnAgentyard } from '../support/agentyard-process.ts';
import type { AgentyardProcess } from '../support/agentyard-process.ts';
import { hostPid, killQuietly, readPidFile } from '../support/processes.ts';
import { pollUntil } from '../support/signals.ts';
import {
  createRun,
  executionsOf,
  FAKE,
  fakeRecords,
  pidAlive,
  startExecServer,
  waitForState,
  whenRunsTold,
  liveWorkspace,
} from '../execution/support.ts';
import type { ExecServer } from '../execution/support.ts';

/** A worker process connecting with a worker token: on its command line, or in AGENTYARD_WORKER_TOKEN. */
function startWorker(
  s: ExecServer,
  token: string,
  workerId: string,
  capacity: number,
  via: 'argv' | 'env' = 'argv',
): AgentyardProcess {
  return spawnAgentyard(
    [
      'worker',
      '--worker-id',
      workerId,
      '--server',
      s.apiUrl,
      ...(via === 'argv' ? ['--token', token] : []),
      '--capacity',
      String(capacity),
      '--harnesses',
      'claude,command',
    ],
    {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      AGENTYARD_HARNESS_CLAUDE_BIN: FAKE.claude,
      AGENTYARD_HARNESS_COMMAND_BIN: FAKE.command,
      ANTHROPIC_API_KEY: 'sk-worker-environment-key',
      ...(via === 'env' ? { AGENTYARD_WORKER_TOKEN: token } : {}),
    },
  );
}

async function workersOf(s: ExecServer, key: string): Promise<any[]> {
  return (await s.api('GET', '/workers', undefined, key)).body.workers;
}

/** Ends what a fake agent left running (a worker killed with -9 leaves its agents behind). */
function killAgentsOf(workspace: string): void {
  for (const rec of fakeRecords(liveWorkspace(workspace))) {
    const pid = hostPid(rec.pid, workspace);
    if (pid !== undefined) killQuietly(pid, 'SIGKILL', { group: true });
  }
  const childPid = hostPid(readPidFile(path.join(liveWorkspace(workspace), '.fake-child.pid')), workspace);
  if (childPid !== undefined) killQuietly(childPid, 'SIGKILL');
}

describe.each(ENGINES)('self-hosted workers on %s', (engine) => {
  let s: ExecServer;
  let key: string;
  let token: string;
  const workers: AgentyardProcess[] = [];
  beforeAll(async () => {
    // the service's own executors offer nothing here: every run below must go to a worker
    s = await startExecServer(engine, { settings: { harnesses: [], defaultHarness: undefined } });
    // runs are created by a member; the workers connect with a token a team admin made for their ids
    key = (await s.api('POST', '/api-keys', { name: 'member key' })).body.key;
    const created = await s.api('POST', '/workers/tokens', { name: 'boxes', worker_ids: ['box-1', 'box-doomed'] });
    expect(created.status, created.text).toBe(201);
    token = created.body.token;
  });
  afterAll(async () => {
    for (const w of workers) await w.stop();
    await s?.close();
  });

  it('runs a run whose worker_host names a connected worker process, and lists the worker', async () => {
    const w = startWorker(s, token, 'box-1', 2);
    workers.push(w);
    await w.printed(/connected to \S+ as worker "box-1"/, 'box-1 to connect');
    const listed = (await workersOf(s, key)).find((x) => x.worker_id === 'box-1' && x.connected);
    expect(listed).toMatchObject({
      capacity: 2,
      harnesses: ['claude', 'command'],
      default_harness: 'claude',
      protocol: 1,
      connected: true,
      registered_with: { kind: 'token', id: expect.stringMatching(/^wtk_/) },
    });

    const runId = await createRun(
      s,
      {
        prompt: 'Inspect the payload LIST_FILES',
        config: { worker_host: 'box-1' },
        attachments: [
          {
            file_name: 'event-payload.json',
            mime_type: 'application/json',
            data: Buffer.from('{"a":1}').toString('base64'),
          },
        ],
      },
      key,
    );
    const run = await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR'], 20_000, key);
    expect(run.state, JSON.stringify(run.status_message)).toBe('SUCCEEDED');
    expect(run.status_message.message).toContain('event-payload.json');
    const [execution] = await executionsOf(s, runId);
    expect(execution!.executor).toMatch(/^worker:box-1\/wrk_/);
    expect(execution!.workspace!.startsWith(path.join(w.dataDir, 'workspaces'))).toBe(true);
    const rec = fakeRecords(execution!.workspace!)[0];
    expect(rec.files).toContain('event-payload.json');
    // auth: workerEnvironment (no managed secret): the worker's own provider key reaches the agent
    expect(rec.env.ANTHROPIC_API_KEY).toBe(`<${'sk-worker-environment-key'.length} chars>`);
    // the factory interface reaches a worker's agent through AGENTYARD_PUBLIC_URL, with the execution's run token
    // (the MCP configuration is the server's file outside the workspace, gone with the execution: the agent's record)
    const mcp = fakeRecords(execution!.workspace!).find((r) => r.mcpConfig)!.mcpConfig;
    expect(mcp.mcpServers.factory).toEqual({
      type: 'http',
      url: `${s.server.ctx.config.publicUrl}/api/v1/mcp/factory`,
      headers: { Authorization: expect.stringMatching(/^Bearer ayrt_[A-Za-z0-9_-]{40,}$/) },
    });
    const conversation = (await s.api('GET', `/agent/runs/${runId}/conversation`, undefined, key)).body;
    expect(conversation.steps[0].id).toBe(execution!.id);
  });

  it('keeps a run for a worker that is not connected QUEUED, saying which worker it waits for', async () => {
    const runId = await createRun(s, { prompt: 'hello', config: { worker_host: 'box-offline' } }, key);
    const run = await whenRunsTold(s, 'the waiting message', async () => {
      const r = (await s.api('GET', `/agent/runs/${runId}`, undefined, key)).body;
      return r.status_message ? r : undefined;
    });
    expect(run.state).toBe('QUEUED');
    expect(run.status_message.message).toBe('Waiting for self-hosted worker "box-offline" to connect');
    await s.api('POST', `/agent/runs/${runId}/cancel`, undefined, key);
  });

  it('never gives a worker more runs than its capacity; the rest wait for a free slot', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push(await createRun(s, { prompt: `batch ${i} WAIT 1.5`, config: { worker_host: 'box-1' } }, key));
    let maxParallel = 0;
    // each step of the runs brings a look at their states (the worker's runs move on this server)
    await whenRunsTold(
      s,
      'the batch to finish',
      async () => {
        const states = await Promise.all(
          ids.map(async (id) => (await s.api('GET', `/agent/runs/${id}`, undefined, key)).body.state),
        );
        maxParallel = Math.max(maxParallel, states.filter((x) => x === 'INPROGRESS' || x === 'CLAIMED').length);
        return states.every((x) => x === 'SUCCEEDED');
      },
      30_000,
    );
    expect(maxParallel).toBeLessThanOrEqual(2);
  });

  it('cancels a run on a worker: the agent process tree stops and the run ends CANCELLED', async () => {
    const runId = await createRun(s, { prompt: 'long job SLEEP 60', config: { worker_host: 'box-1' } }, key);
    await waitForState(s, runId, ['INPROGRESS'], 20_000, key);
    const [execution] = await executionsOf(s, runId);
    const workspace = execution!.workspace!;
    // the pids the agent wrote are those of its sandbox's pid namespace
    const childPid = await pollUntil(
      () => hostPid(readPidFile(path.join(liveWorkspace(workspace), '.fake-child.pid')), workspace),
      { what: 'the agent child: its pid, written in the sandbox (no output tells it)' },
    );
    const agentPid = await pollUntil(() => hostPid(fakeRecords(liveWorkspace(workspace))[0]?.pid, workspace), {
      what: 'the agent: its pid, written in the sandbox (no output tells it)',
    });
    expect((await s.api('POST', `/agent/runs/${runId}/cancel`, undefined, key)).status).toBe(200);
    await pollUntil(() => !pidAlive(childPid) && !pidAlive(agentPid), {
      what: 'the agent tree to stop (processes of the sandbox: no exit event reaches the test)',
      timeoutMs: 10_000,
    });
    await whenRunsTold(s, 'the execution to end', async () => (await executionsOf(s, runId))[0]!.ended_at !== null);
    expect((await executionsOf(s, runId))[0]).toMatchObject({ outcome: 'cancelled' });
    expect((await s.api('GET', `/agent/runs/${runId}`, undefined, key)).body.state).toBe('CANCELLED');
  });

  it('ends a run ERROR by lease expiry when its worker is killed with -9 mid-run', async () => {
    const w = startWorker(s, token, 'box-doomed', 1, 'env');
    workers.push(w);
    await w.printed(/connected to \S+ as worker "box-doomed"/, 'box-doomed to connect');
    const runId = await createRun(s, { prompt: 'doomed SLEEP 60', config: { worker_host: 'box-doomed' } }, key);
    await waitForState(s, runId, ['INPROGRESS'], 20_000, key);
    const [execution] = await executionsOf(s, runId);
    await pollUntil(() => fakeRecords(liveWorkspace(execution!.workspace!)).length > 0, {
      what: 'the agent to start: its record, written in the sandbox (no output tells it)',
    });
    w.child.kill('SIGKILL');
    try {
      const run = await waitForState(s, runId, ['ERROR', 'SUCCEEDED', 'FAILED'], 20_000, key);
      expect(run.state).toBe('ERROR');
      expect(run.status_message.error_detail).toBe('lease_expired');
      expect(run.status_message.message).toContain('worker:box-doomed/');
      expect((await executionsOf(s, runId))[0]).toMatchObject({ outcome: 'lost' });
      const listed = (await workersOf(s, key)).find((x) => x.worker_id === 'box-doomed');
      expect(listed.connected).toBe(false);
    } finally {
      killAgentsOf(execution!.workspace!);
    }
  });
});
