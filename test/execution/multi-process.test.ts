/**
 * Several server processes on one PostgreSQL database: a run executing in another process (`agentyard serve
 * --roles executor`, a real OS process) is cancelled through this one's API — the cancellation crosses the
 * processes on the bus (LISTEN/NOTIFY) and by the executors' poll, and the agent's process tree stops; an
 * executor process killed with -9 mid-run leaves its run to the reaper, which ends it ERROR by lease expiry.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnAgentyard, serveEnv } from '../support/agentyard-process.ts';
import type { AgentyardProcess } from '../support/agentyard-process.ts';
import { createTestDatabase, ENGINES } from '../support/db.ts';
import { hostPid, killQuietly, readPidFile } from '../support/processes.ts';
import { pollUntil } from '../support/signals.ts';
import type { TestDatabase } from '../support/db.ts';
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
} from './support.ts';
import type { ExecServer } from './support.ts';

function startExecutorProcess(database: TestDatabase): AgentyardProcess {
  return spawnAgentyard(
    ['serve', '--roles', 'executor', '--port', '0', '--host', '127.0.0.1'],
    serveEnv(database, {
      AGENTYARD_HARNESSES: 'claude',
      AGENTYARD_HARNESS_CLAUDE_BIN: FAKE.claude,
      AGENTYARD_LEASE_MS: '3000',
      AGENTYARD_HEARTBEAT_MS: '300',
      AGENTYARD_EXECUTOR_POLL_MS: '5000',
    }),
  );
}

describe.skipIf(!ENGINES.includes('postgres'))('runs executing in another server process on postgres', () => {
  let database: TestDatabase;
  let api: ExecServer;
  const processes: AgentyardProcess[] = [];
  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    // this process serves the API only: it executes nothing
    api = await startExecServer('postgres', { database, config: { roles: new Set(['api']) } });
    await api.api('PUT', '/secrets/claude-key', { value: 'sk-multi-process' });
  });
  afterAll(async () => {
    for (const p of processes) await p.stop();
    await api?.close();
    await database?.close();
  });

  async function startedRun(
    prompt: string,
  ): Promise<{ runId: string; workspace: string; agentPid: number; childPid: number }> {
    const runId = await createRun(api, {
      prompt,
      config: { harness_auth_secrets: { claude_auth_secret_name: 'claude-key' } },
    });
    await waitForState(api, runId, ['INPROGRESS'], 30_000);
    const [execution] = await executionsOf(api, runId);
    expect(execution!.executor).toMatch(/^service:/);
    const workspace = execution!.workspace!;
    // the pids the agent wrote are those of its sandbox's pid namespace
    const childPid = await pollUntil(
      () => hostPid(readPidFile(path.join(liveWorkspace(workspace), '.fake-child.pid')), workspace),
      { what: 'the agent child: its pid, written in the sandbox (no output tells it)' },
    );
    const agentPid = await pollUntil(() => hostPid(fakeRecords(liveWorkspace(workspace))[0]?.pid, workspace), {
      what: 'the agent record: its pid, written in the sandbox (no output tells it)',
    });
    return { runId, workspace, agentPid, childPid };
  }

  it('cancels a run executing in another process: its agent process tree stops and the run ends CANCELLED', async () => {
    const executor = startExecutorProcess(database);
    processes.push(executor);
    const { runId, agentPid, childPid } = await startedRun('long task SLEEP 120');
    const cancelledAt = Date.now();
    const res = await api.api('POST', `/agent/runs/${runId}/cancel`);
    expect(res.status).toBe(200);
    // the executor polls only every 5 s here: the bus (LISTEN/NOTIFY) carries the cancellation
    await pollUntil(() => !pidAlive(agentPid) && !pidAlive(childPid), {
      what: 'the agent process tree to stop (processes of the sandbox: no exit event reaches the test)',
      timeoutMs: 10_000,
    });
    console.log(`cancel → agent tree gone in another process: ${Date.now() - cancelledAt} ms`);
    await whenRunsTold(api, 'the execution to end', async () => (await executionsOf(api, runId))[0]!.ended_at !== null);
    expect((await executionsOf(api, runId))[0]).toMatchObject({ outcome: 'cancelled' });
    const run = (await api.api('GET', `/agent/runs/${runId}`)).body;
    expect(run.state).toBe('CANCELLED');
    const states = (await api.api('GET', `/agent/events?run_ids=${runId}&limit=500`)).body.map(
      (e: { event_type: string }) => e.event_type,
    );
    expect(states.filter((t: string) => t.startsWith('run_'))).toEqual([
      'run_claimed',
      'run_in_progress',
      'run_cancelled',
    ]);
    await executor.stop();
  });

  it('ends a run ERROR by lease expiry when the executor process executing it is killed with -9', async () => {
    const executor = startExecutorProcess(database);
    processes.push(executor);
    const { runId, agentPid, childPid } = await startedRun('doomed SLEEP 120');
    executor.child.kill('SIGKILL');
    try {
      // the reaper of this (API-only) process takes it
      const run = await waitForState(api, runId, ['ERROR', 'SUCCEEDED', 'FAILED', 'CANCELLED'], 20_000);
      expect(run.state).toBe('ERROR');
      expect(run.status_message.error_detail).toBe('lease_expired');
      expect((await executionsOf(api, runId))[0]).toMatchObject({ outcome: 'lost' });
    } finally {
      killQuietly(agentPid, 'SIGKILL', { group: true });
      killQuietly(childPid, 'SIGKILL');
    }
  });
});
