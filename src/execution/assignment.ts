/**
 * An execution assignment: everything an agent needs to work on one execution of a run, resolved by the server
 * (prompt, skill files, attachments, secrets) so that the service's executors and a self-hosted worker run
 * it the same way. Plain JSON: the worker protocol sends it as the `assignment`.
 */
import type { McpServerConfig } from '../engine/model.ts';
import type { RunEventType } from '../engine/events.ts';
import type { RunnerLimits } from './limits.ts';
import type { HarnessType } from './settings.ts';
import type { UsageBefore } from './usage-budget.ts';

export interface AssignmentFile {
  /** Path relative to the skill directory. */
  path: string;
  content: string;
}

export type AssignmentSkill =
  | { spec: string; name: string; resolved: true; source: string; files: AssignmentFile[] }
  | { spec: string; name: string; resolved: false; reason: string };

export interface AssignmentAttachment {
  fileName: string;
  mimeType: string;
  base64: string;
}

export interface AssignmentFollowup {
  id: string;
  message: string;
}

export interface Assignment {
  executionId: string;
  runId: string;
  teamId: string;
  attempt: number;
  harness: HarnessType;
  title: string;
  /** What the agent is told in this execution (the run's prompt, or the follow-ups that continue it). */
  prompt: string;
  /** The run's prompt as it was created. */
  runPrompt: string;
  basePrompt: string | undefined;
  /** The harness-native model name; undefined: the CLI's default. */
  modelId: string | undefined;
  reasoningLevel: string | undefined;
  mcpServers: Record<string, McpServerConfig>;
  skill: AssignmentSkill | undefined;
  attachments: AssignmentAttachment[];
  /**
   * Environment variables holding the provider key (`ANTHROPIC_API_KEY`...) from the run's managed secret.
   * Never logged, never on a command line.
   */
  secretEnv: Record<string, string>;
  /** managedSecret: `secretEnv` has the key; workerEnvironment: the worker's own environment provides it. */
  authSource: 'managedSecret' | 'workerEnvironment' | 'none';
  /** The agent CLI session to resume (a follow-up to a finished run). */
  resumeSessionId: string | undefined;
  /** The execution before this one, whose workspace (when it is still on this host) this one continues in. */
  previousExecutionId: string | undefined;
  /** The container image of the run's runner (`platform.linux.dockerImage`), for hosts with a container runtime. */
  image?: string;
  /**
   * The factory interface (docs/orchestration.md): its URL and this execution's run token. Each harness writes it
   * into its MCP configuration as the server `factory`; the `command` harness gets AGENTYARD_MCP_URL and
   * AGENTYARD_RUN_TOKEN. Redacted from events like a secret.
   */
  factoryMcp?: { url: string; token: string };
  /** The `x-agentyard-limits` of the run's runner: they tighten the executing host's own limits. */
  limits?: RunnerLimits;
  /** The run's runner's `network` (its egress policy: `none`, `{allow: [...]}`), as the factory stores it. */
  network?: unknown;
  /** Follow-ups this execution delivers (they are part of `prompt`). */
  followups: AssignmentFollowup[];
  /** The run as the `command` harness receives it on stdin. */
  run: {
    source: string;
    config: Record<string, unknown>;
    metadata: Record<string, string>;
    createdAt: string;
    sessionLink: string;
    /** What the run's earlier executions used, for its usage budgets (absent: nothing reported yet). */
    usage?: UsageBefore;
  };
}

/** What an agent reports while it works; stored as run events (`data` per type: docs/execution.md). */
export interface AgentEvent {
  type: RunEventType;
  data: Record<string, unknown>;
  /** ISO time the agent reported it; the time of storing when absent. */
  at?: string;
}

/** How an execution ended, as the runner saw it. */
/** How an execution ended (the run engine's type: engine/lifecycle.ts). */
export type { ExecutionOutcome } from '../engine/lifecycle.ts';

/** The provider key variable each harness reads. */
export const SECRET_ENV_OF: Record<HarnessType, string[]> = {
  claude: ['ANTHROPIC_API_KEY'],
  codex: ['OPENAI_API_KEY', 'CODEX_API_KEY'],
  gemini: ['GEMINI_API_KEY'],
  command: ['AGENT_API_KEY'],
  agentyard: ['AGENTYARD_OPENAI_API_KEY'],
  noop: [],
};
