import { clientSource, servedStatusMessage } from './client-enums.ts';
import type { ClientRunSource, RunSource, ServedStatusMessage } from './client-enums.ts';
import type { RunState } from './state-machine.ts';

export { RUN_SOURCES } from './client-enums.ts';
export type { RunSource } from './client-enums.ts';

export interface McpServerConfig {
  warp_id?: string;
  command?: string;
  args?: string[];
  url?: string;
  env?: Record<string, string>;
  headers?: Record<string, string>;
}

/** The run's configuration as the API accepts and answers it (Oz `AmbientAgentConfig`). */
export interface AgentConfig {
  name?: string;
  model_id?: string;
  base_prompt?: string;
  environment_id?: string;
  worker_host?: string;
  skill_spec?: string;
  mcp_servers?: Record<string, McpServerConfig>;
  computer_use_enabled?: boolean;
  idle_timeout_minutes?: number;
  /** `base_url`: the built-in agent's endpoint (`type: agentyard`). */
  harness?: { type?: string; model_id?: string; reasoning_level?: string; base_url?: string };
  harness_auth_secrets?: {
    claude_auth_secret_name?: string;
    codex_auth_secret_name?: string;
    gemini_auth_secret_name?: string;
    agentyard_auth_secret_name?: string;
  };
  skills?: string[];
  runner_id?: string;
  /** Agentyard extension: wall-clock budget in seconds; past it the run ends FAILED with `budget_exceeded`. */
  max_duration_seconds?: number;
  /** Agentyard extension: most model turns (Claude Code `--max-turns`, the built-in agent). */
  max_turns?: number;
  /** Agentyard extension: most tokens (input + output) the run's agent may use, as its harness reports them. */
  max_tokens?: number;
  /** Agentyard extension: most cost in USD the run's agent may spend, as its harness reports it. */
  max_cost_usd?: number;
  [key: string]: unknown;
}

export interface Creator {
  id: string;
  type: 'user' | 'service_account';
  displayName: string;
  email: string | null;
}

/** Whom a CREATOR run acts as: the verified sender of the provider event that started it (never client input). */
export interface ActsAs {
  provider: string;
  /** The sender's account as the provider's signed event named it (GitHub login, Slack or Linear user id). */
  account: string | null;
}

export interface RunRow {
  id: string;
  team_id: string;
  title: string;
  prompt: string;
  state: RunState;
  source: RunSource;
  config: AgentConfig;
  config_name: string | null;
  model_id: string | null;
  environment_id: string | null;
  skill_spec: string | null;
  worker_host: string | null;
  creator_id: string | null;
  creator_type: 'user' | 'service_account' | null;
  creator_name: string | null;
  creator_email: string | null;
  /** Who the run executes as when it is not the creator: the agent identity named at creation. */
  executor_id: string | null;
  executor_type: 'user' | 'service_account' | null;
  executor_name: string | null;
  factory_id: string | null;
  automation_id: string | null;
  delivery_id: string | null;
  schedule_id: string | null;
  /** The schedule that fired the run, as it was at the fire (absent before migration 0040). */
  schedule_info?: { schedule_id: string; schedule_name: string; cron_schedule: string } | null;
  parent_run_id: string | null;
  conversation_id: string | null;
  session_id: string;
  execution_location: 'LOCAL' | 'REMOTE';
  status_message: { message: string; error_code?: string; retryable?: boolean } | null;
  artifacts: unknown[];
  metadata: Record<string, string>;
  /** credentialStrategy CREATOR: set by the server from a signed provider event; null otherwise (migration 0072). */
  acts_as?: ActsAs | null;
  request_usage: Record<string, number> | null;
  /** The concurrency key its automation rendered when it fired, and the limit then (migration 0087). */
  concurrency_key?: string | null;
  concurrency_limit?: number | null;
  /** The newer run of its key that cancelled it (`onNew: cancelRunning`). */
  superseded_by?: string | null;
  created_at: Date;
  updated_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

export interface RunItem {
  run_id: string;
  task_id: string;
  title: string;
  state: RunState;
  prompt: string;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  execution_location: 'LOCAL' | 'REMOTE';
  status_message?: ServedStatusMessage;
  source: ClientRunSource;
  /** The stored source when it is finer than the client's (`WEBHOOK`, `FACTORY`). */
  source_detail?: RunSource;
  session_id: string;
  session_link: string;
  creator?: { type: 'user' | 'service_account'; uid: string; display_name: string; email?: string };
  executor?: { type: 'user' | 'service_account'; uid: string; display_name: string };
  agent_config: AgentConfig;
  conversation_id: string;
  parent_run_id?: string;
  artifacts: unknown[];
  scope: { type: 'Team'; uid: string };
  is_run_type_cancellable: boolean;
  metadata: Record<string, string>;
  request_usage?: Record<string, number>;
  run_time?: string;
  schedule?: { schedule_id: string; schedule_name: string; cron_schedule: string };
  agent_skill?: { name?: string; full_path?: string };
  factory_uid?: string;
  automation_id?: string;
  delivery_id?: string;
  worker_host?: string;
  /** Agentyard extension: the run's concurrency key and limit, and the newer run that cancelled it. */
  concurrency?: { key: string; limit: number; superseded_by?: string };
}

/** ISO-8601 duration of a run (`PT2M30S`), from its start to its end or to now. */
export function runTime(start: Date | null, end: Date | null, now = new Date()): string | undefined {
  if (!start) return undefined;
  return isoDuration(((end ?? now).getTime() - start.getTime()) / 1000);
}

/** `PT1H2M3S` for a number of seconds (rounded; at least `PT0S`). */
export function isoDuration(totalSeconds: number): string {
  let seconds = Math.max(0, Math.round(totalSeconds));
  const h = Math.floor(seconds / 3600);
  seconds -= h * 3600;
  const m = Math.floor(seconds / 60);
  seconds -= m * 60;
  return `PT${h ? `${h}H` : ''}${m ? `${m}M` : ''}${seconds || (!h && !m) ? `${seconds}S` : ''}`;
}

/** A creator or executor as the API shows it; undefined when the row has none. */
function principalOf(
  type: 'user' | 'service_account' | null,
  uid: string | null,
  name: string | null,
): { type: 'user' | 'service_account'; uid: string; display_name: string } | undefined {
  return type && uid ? { type, uid, display_name: name ?? uid } : undefined;
}

/**
 * `sessionLink` makes the run's signed session link (src/runs/session-link.ts). `executedSeconds`: the time
 * the run's executions took (sql.executionSeconds), what `run_time` reports; without it, the span from the
 * first start to the last end (which counts the waits between executions).
 */
export function toRunItem(row: RunRow, sessionLink: (sessionId: string) => string, executedSeconds?: number): RunItem {
  const skillName = row.skill_spec ? row.skill_spec.split(':').pop() : undefined;
  const creator = principalOf(row.creator_type, row.creator_id, row.creator_name);
  const executor = principalOf(row.executor_type, row.executor_id, row.executor_name);
  return {
    run_id: row.id,
    task_id: row.id,
    title: row.title,
    state: row.state,
    prompt: row.prompt,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    started_at: row.started_at ? row.started_at.toISOString() : null,
    execution_location: row.execution_location,
    ...(row.status_message ? { status_message: servedStatusMessage(row.status_message) } : {}),
    source: clientSource(row.source),
    ...(clientSource(row.source) !== row.source ? { source_detail: row.source } : {}),
    session_id: row.session_id,
    session_link: sessionLink(row.session_id),
    ...(creator ? { creator: { ...creator, ...(row.creator_email ? { email: row.creator_email } : {}) } } : {}),
    // A run executes as its creator unless an agent identity executes it.
    ...(executor || creator ? { executor: executor ?? creator } : {}),
    agent_config: row.config,
    // A run starts a conversation named by its id, or continues the one it was created with.
    conversation_id: row.conversation_id ?? row.id,
    ...(row.parent_run_id ? { parent_run_id: row.parent_run_id } : {}),
    artifacts: row.artifacts,
    scope: { type: 'Team', uid: row.team_id },
    is_run_type_cancellable: true,
    metadata: row.metadata,
    ...(row.request_usage ? { request_usage: row.request_usage } : {}),
    ...(executedSeconds !== undefined
      ? { run_time: isoDuration(executedSeconds) }
      : row.started_at
        ? { run_time: runTime(row.started_at, row.finished_at)! }
        : {}),
    ...(row.skill_spec
      ? { agent_skill: { ...(skillName ? { name: skillName } : {}), full_path: row.skill_spec } }
      : {}),
    ...(row.factory_id ? { factory_uid: row.factory_id } : {}),
    ...(row.automation_id ? { automation_id: row.automation_id } : {}),
    ...(row.delivery_id ? { delivery_id: row.delivery_id } : {}),
    ...(row.worker_host ? { worker_host: row.worker_host } : {}),
    ...(row.schedule_info ? { schedule: row.schedule_info } : {}),
    ...(row.concurrency_key
      ? {
          concurrency: {
            key: row.concurrency_key,
            limit: row.concurrency_limit ?? 1,
            ...(row.superseded_by ? { superseded_by: row.superseded_by } : {}),
          },
        }
      : {}),
  };
}
