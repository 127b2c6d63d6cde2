import { existsSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import type { ExecutionParts } from '../../src/composition.ts';
import type { BuiltinAgentSettings } from '../../src/execution/harnesses/agentyard.ts';
import type { ExecutionSettings } from '../../src/execution/settings.ts';
import type { Config } from '../../src/config.ts';
import type { Bus } from '../../src/kernel/bus.ts';
import {
  EXECUTIONS_ENDED_TOPIC,
  RUN_CHANGED_TOPIC,
  RUN_EVENTS_TOPIC,
  RUN_LIFECYCLE_TOPIC,
} from '../../src/kernel/topics.ts';
import type { Topic } from '../../src/kernel/topics.ts';
import type { Engine, TestDatabase } from '../support/db.ts';
import { inState, waitForRun } from '../support/run-events.ts';
import { whenTold } from '../support/signals.ts';
import type { Check } from '../support/signals.ts';
import { startOpenAiStandin } from '../support/openai-standin.ts';
import type { OpenAiStandin, Script } from '../support/openai-standin.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const AGENTS = path.join(ROOT, 'test/fixtures/agents');
export const FAKE = {
  claude: path.join(AGENTS, 'fake-claude.mjs'),
  codex: path.join(AGENTS, 'fake-codex.mjs'),
  gemini: path.join(AGENTS, 'fake-gemini.mjs'),
  command: path.join(AGENTS, 'fake-command.mjs'),
};

/** Quick leases and polls, every harness on the fakes. */
export function fastSettings(over: Partial<ExecutionSettings> = {}): Partial<ExecutionSettings> {
  return {
    concurrency: 4,
    harnesses: ['claude', 'codex', 'gemini', 'command', 'noop'],
    defaultHarness: 'claude',
    bins: FAKE,
    leaseMs: 3_000,
    heartbeatMs: 300,
    pollMs: 200,
    killGraceMs: 500,
    ...over,
  };
}

export interface ExecServer extends TestServer {
  parts: ExecutionParts;
}

export async function startExecServer(
  engine: Engine,
  options: { settings?: Partial<ExecutionSettings>; config?: Partial<Config>; database?: TestDatabase } = {},
): Promise<ExecServer> {
  const s = await startTestServer(engine, {
    compose: { execution: { env: {}, settings: fastSettings(options.settings) } },
    ...(options.config ? { config: options.config } : {}),
    ...(options.database ? { database: options.database } : {}),
  });
  return Object.assign(s, { parts: s.server.services.execution });
}

/** The model key the built-in agent's stand-in endpoint is given (long enough to be redacted). */
export const STANDIN_KEY = 'sk-standin-0123456789abcdef';

export interface BuiltinAgentServer {
  s: ExecServer;
  /** The stand-in OpenAI-compatible endpoint the agents talk to. */
  model: OpenAiStandin;
  close(): Promise<void>;
}

/**
 * A PGlite server whose executors run only the built-in agent (`harness: agentyard`), its model a stand-in
 * endpoint answering by `script`; `builtin` overrides the agent's settings (turns, deadline, timeout).
 */
export async function startBuiltinAgentServer(
  script: Script,
  builtin: Partial<BuiltinAgentSettings> = {},
): Promise<BuiltinAgentServer> {
  const model = await startOpenAiStandin(script);
  try {
    const s = await startExecServer('pglite', {
      settings: {
        harnesses: ['agentyard'],
        defaultHarness: 'agentyard',
        builtin: {
          baseUrl: model.baseUrl,
          apiKey: STANDIN_KEY,
          model: 'local-model',
          maxTurns: 20,
          deadlineMs: 60_000,
          requestTimeoutMs: 30_000,
          ...builtin,
        },
      },
    });
    return {
      s,
      model,
      async close() {
        await s.close();
        await model.close();
      },
    };
  } catch (err) {
    await model.close();
    throw err;
  }
}

/** What the server says when a run changed: its state, its events (artifacts among them), an execution's end. */
export const RUN_TOPICS: readonly Topic[] = [
  RUN_LIFECYCLE_TOPIC,
  RUN_CHANGED_TOPIC,
  RUN_EVENTS_TOPIC,
  EXECUTIONS_ENDED_TOPIC,
];

/**
 * Resolves with what `check` answers once it answers a value, asking again each time the server tells that a run
 * changed (RUN_TOPICS; from other processes too, on PostgreSQL), never on a timer.
 */
export function whenRunsTold<T>(
  s: { server: { ctx: { bus: Bus } } },
  what: string,
  check: Check<T>,
  timeoutMs = 20_000,
): Promise<T> {
  return whenTold(s.server.ctx.bus, RUN_TOPICS, check, { what, timeoutMs });
}

/**
 * The run as the API answers it once it is in one of `states`: waits on the engine's lifecycle steps
 * (test/support/run-events.ts), reading the run when one may be the awaited state.
 */
export async function waitForState(
  s: TestServer,
  runId: string,
  states: string[],
  timeoutMs = 20_000,
  key?: string,
): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  const read = async () => (await s.api('GET', `/agent/runs/${runId}`, undefined, key)).body;
  for (;;) {
    let body: any;
    await waitForRun(s.server.ctx.bus, runId, inState(...states), {
      current: async () => {
        body = await read();
        return body.state;
      },
      timeoutMs: Math.max(1, deadline - Date.now()),
    }).catch((err: unknown) => {
      throw new Error(`run ${runId} to reach ${states.join('|')} (it is ${body?.state}): ${String(err)}`);
    });
    // the step said so; the run as read now (it may have moved on again: then wait for the next step)
    body = await read();
    if (states.includes(body.state)) return body;
  }
}

export async function createRun(s: TestServer, body: Record<string, unknown>, key?: string): Promise<string> {
  const res = await s.api('POST', '/agent/runs', body, key);
  if (res.status !== 200) throw new Error(`create run: ${res.status} ${res.text}`);
  return res.body.run_id as string;
}

export interface ExecutionRow {
  id: string;
  run_id: string;
  attempt: number;
  executor: string;
  harness: string;
  workspace: string | null;
  outcome: string | null;
  exit_code: number | null;
  agent_session_id: string | null;
  started_at: Date | null;
  ended_at: Date | null;
}

export async function executionsOf(s: TestServer, runId: string): Promise<ExecutionRow[]> {
  return (
    await s.server.ctx.db.query<ExecutionRow>('SELECT * FROM executions WHERE run_id = $1 ORDER BY attempt', [runId])
  ).rows;
}

/** fixtures/agents/shell-agent.mjs: a `command` agent that runs its prompt's `<<SH … SH>>` script in a shell. */
export const SHELL_AGENT = path.join(AGENTS, 'shell-agent.mjs');

/**
 * Starts a run whose shell agent (SHELL_AGENT) runs `script`, and waits for the run to end and then for its last
 * execution to end: a run can end (a limit's stop) while its execution still copies the workspace back.
 */
export async function runShellScript(
  s: TestServer,
  script: string,
  extra: Record<string, unknown> = {},
  timeoutMs = 60_000,
): Promise<{ run: any; runId: string; workspace: string }> {
  const runId = await createRun(s, {
    prompt: `<<SH\n${script}\nSH>>`,
    config: { harness: { type: 'command' } },
    ...extra,
  });
  const run = await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'], timeoutMs);
  const execution = await whenRunsTold(s, 'the execution to end', async () => {
    const last = (await executionsOf(s, runId)).at(-1);
    return last?.ended_at ? last : undefined;
  });
  return { run, runId, workspace: execution.workspace! };
}

/** The fake agent's records of its invocations in a workspace (one per invocation or turn). */
export function fakeRecords(workspace: string): any[] {
  const file = path.join(workspace, '.fake-record.json');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

export async function eventsOf(
  s: TestServer,
  runId: string,
): Promise<{ sequence: number; type: string; data: any; execution_id: string | null }[]> {
  const res = await s.server.ctx.db.query<{ sequence: number; type: string; data: any; execution_id: string | null }>(
    'SELECT sequence, type, data, execution_id FROM run_events WHERE run_id = $1 ORDER BY sequence',
    [runId],
  );
  return res.rows.map((r) => ({ ...r, sequence: Number(r.sequence) }));
}

/** Whether a process runs (a zombie, ended but not yet reaped by its parent or init, does not). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/**
 * Where a running agent's workspace can be read while its sandbox runs: in the bubblewrap sandbox the
 * workspace is a tmpfs of its own, copied back to `workspace` only when the agent ends, so its files are read
 * through the root of a process of the sandbox (`/proc/<pid>/root<workspace>`). `workspace` itself when no such
 * process runs (no sandbox, or it has ended).
 */
export function liveWorkspace(workspace: string): string {
  const ours = readlinkSync('/proc/self/ns/mnt');
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/ns/mnt`) === ours) continue;
      const cwd = readlinkSync(`/proc/${entry}/cwd`);
      if (cwd === workspace || cwd.startsWith(`${workspace}/`)) return `/proc/${entry}/root${workspace}`;
    } catch {
      // exited meanwhile, or not ours to read
    }
  }
  return workspace;
}
