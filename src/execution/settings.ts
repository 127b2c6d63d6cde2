import type { HarnessChoice } from '../engine/claim.ts';
import path from 'node:path';
import { serverLimits } from './limits.ts';
import type { ServerLimits } from './limits.ts';
import type { BuiltinAgentSettings } from './harnesses/agentyard.ts';
import { sandboxSettings } from './sandbox/index.ts';
import { repositorySettings } from './repo-checkout.ts';
import type { RepositorySettings } from './repo-checkout.ts';
import type { SandboxSettings } from './sandbox/index.ts';

/** The harness types Agentyard can run. `oz` in a run names none of them: it maps to the default harness. */
export const HARNESS_TYPES = ['claude', 'codex', 'gemini', 'command', 'agentyard', 'noop'] as const;
export type HarnessType = (typeof HARNESS_TYPES)[number];

export function isHarnessType(value: string): value is HarnessType {
  return (HARNESS_TYPES as readonly string[]).includes(value);
}

/** How run configurations spell harness types (`harness.type`), onto the adapter that runs them. */
const HARNESS_ALIASES: Record<string, HarnessType> = {
  claude: 'claude',
  'claude-code': 'claude',
  claude_code: 'claude',
  codex: 'codex',
  gemini: 'gemini',
  'gemini-cli': 'gemini',
  command: 'command',
  agentyard: 'agentyard',
  noop: 'noop',
};

/** Every `harness.type` spelling of these harnesses, for the dispatch query (plus `oz` when there is a default). */
export function harnessSpellings(harnesses: readonly HarnessType[], defaultHarness: HarnessType | undefined): string[] {
  const spellings = Object.entries(HARNESS_ALIASES)
    .filter(([, type]) => harnesses.includes(type))
    .map(([spelling]) => spelling);
  if (defaultHarness) spellings.push('oz');
  return spellings;
}

/** What an engine claim takes of the harnesses an executor runs (engine/claim.ts, HarnessChoice). */
export function harnessChoice(
  harnesses: readonly HarnessType[],
  defaultHarness: HarnessType | undefined,
): HarnessChoice<HarnessType> {
  const spellings = harnessSpellings(harnesses, defaultHarness);
  return { spellings, types: spellings.map((s) => harnessFor(s, defaultHarness)!) };
}

/** The harness a run's `harness.type` asks for; `oz` (or none) is the executor's default harness. */
export function harnessFor(
  requested: string | undefined | null,
  defaultHarness: HarnessType | undefined,
): HarnessType | undefined {
  const type = requested?.trim().toLowerCase() || 'oz';
  if (type === 'oz') return defaultHarness;
  return HARNESS_ALIASES[type];
}

/** Executable per harness; the built-in agent's defaults to this process's Node. */
export type HarnessBins = Record<Exclude<HarnessType, 'noop' | 'agentyard'>, string> & { agentyard?: string };

export interface ExecutionSettings {
  /** Runs this process executes at once (`AGENTYARD_EXECUTOR_CONCURRENCY`, default 4). */
  concurrency: number;
  /** Harnesses this process's executors run (`AGENTYARD_HARNESSES`); none: the executors take no run. */
  harnesses: HarnessType[];
  /** What runs with harness `oz` or none get (`AGENTYARD_DEFAULT_HARNESS`; default the first harness; `none`: no default). */
  defaultHarness: HarnessType | undefined;
  /** Executable per harness (`AGENTYARD_HARNESS_CLAUDE_BIN`, `..._CODEX_BIN`, `..._GEMINI_BIN`, `..._COMMAND_BIN`). */
  bins: HarnessBins;
  /** The built-in agent's endpoint and limits (`AGENTYARD_OPENAI_*`, `AGENTYARD_AGENT_*`). */
  builtin: BuiltinAgentSettings;
  /**
   * Where a benchmark task's starting repositories are fetched from (AGENTYARD_GIT_BASE_URL,
   * AGENTYARD_GITLAB_BASE_URL) and the URL policy git is held to (the server's git sources' policy).
   */
  repositories: RepositorySettings;
  /** Extra arguments of the `command` harness (`AGENTYARD_HARNESS_COMMAND_ARGS`, a JSON array). */
  commandArgs: string[];
  /** A lease lasts this long without a heartbeat (`AGENTYARD_LEASE_MS`, default 30 000). */
  leaseMs: number;
  /** Heartbeat interval (`AGENTYARD_HEARTBEAT_MS`, default 5 000; at most a third of the lease). */
  heartbeatMs: number;
  /** Poll interval for queued runs, cancellations and expired leases (`AGENTYARD_EXECUTOR_POLL_MS`, default 1 000). */
  pollMs: number;
  /** Workspaces live here: `<dataDir>/workspaces/<execution id>`. */
  workspaceRoot: string;
  /**
   * The server's per-execution files for the sandbox (passwd, group, MCP configuration), outside any workspace:
   * `<dataDir>/execution-files/<execution id>`, bound read-only into the sandbox.
   */
  configRoot: string;
  /** An execution whose workspace grows past this many bytes is stopped (`AGENTYARD_WORKSPACE_MAX_MB`, default 2048). */
  workspaceMaxBytes: number;
  /** How long a finished execution's workspace is kept for a follow-up (`AGENTYARD_WORKSPACE_RETENTION_HOURS`, default 24). */
  workspaceRetentionMs: number;
  /** SIGTERM, then SIGKILL after this long (ms) when an agent is stopped. */
  killGraceMs: number;
  /**
   * Variables of this process's own environment handed to agents (`AGENTYARD_AGENT_PASS_ENV`, comma-separated).
   * Nothing else of it is: a server's DATABASE_URL or master key never reaches an agent.
   */
  passEnv: string[];
  /** What one execution may use, at most (docs/execution.md, "Limits of an execution"); runners may tighten them. */
  limits: ServerLimits;
  /**
   * The server agents talk to (its public URL; a worker's `--server`): the one non-public address the egress
   * proxy always lets them reach.
   */
  serverUrl?: () => string | undefined;
  /** How agents are isolated (AGENTYARD_SANDBOX, AGENTYARD_REQUIRE_SANDBOX, AGENTYARD_BWRAP_PATH…; docs/security.md). */
  sandbox: SandboxSettings;
}

/** Provider key variables a self-hosted worker hands to agents by default (`auth: workerEnvironment`). */
export const PROVIDER_KEY_VARS = [
  'ANTHROPIC_API_KEY',
  'OPENAI_API_KEY',
  'CODEX_API_KEY',
  'GEMINI_API_KEY',
  'GOOGLE_API_KEY',
];

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min)
    throw new Error(`${name} must be an integer of at least ${min}, got "${raw}"`);
  return value;
}

function harnessList(name: string, raw: string | undefined): HarnessType[] {
  if (!raw) return [];
  const list: HarnessType[] = [];
  for (const part of raw
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean)) {
    const type = HARNESS_ALIASES[part];
    if (!type) throw new Error(`${name}: unknown harness "${part}" (expected some of ${HARNESS_TYPES.join(', ')})`);
    if (!list.includes(type)) list.push(type);
  }
  return list;
}

/** Settings from the environment, with overrides (tests, the worker command). */
export function executionSettings(
  dataDir: string,
  env: NodeJS.ProcessEnv = process.env,
  overrides: Partial<ExecutionSettings> = {},
): ExecutionSettings {
  let harnesses = overrides.harnesses ?? harnessList('AGENTYARD_HARNESSES', env.AGENTYARD_HARNESSES);
  let defaultHarness: HarnessType | undefined;
  if ('defaultHarness' in overrides) {
    // an explicit undefined: runs naming no harness are not taken here
    defaultHarness = overrides.defaultHarness;
  } else {
    const raw = env.AGENTYARD_DEFAULT_HARNESS?.trim().toLowerCase();
    if (raw === 'none') defaultHarness = undefined;
    else if (raw) {
      defaultHarness = HARNESS_ALIASES[raw];
      if (!defaultHarness)
        throw new Error(
          `AGENTYARD_DEFAULT_HARNESS: unknown harness "${raw}" (expected one of ${HARNESS_TYPES.join(', ')}, or none)`,
        );
    } else defaultHarness = harnesses[0];
  }
  if (defaultHarness && !harnesses.includes(defaultHarness)) harnesses = [defaultHarness, ...harnesses];
  const leaseMs = overrides.leaseMs ?? int(env, 'AGENTYARD_LEASE_MS', 30_000, 100);
  const heartbeatMs = Math.min(
    overrides.heartbeatMs ?? int(env, 'AGENTYARD_HEARTBEAT_MS', 5_000, 20),
    Math.floor(leaseMs / 3),
  );
  let commandArgs: string[] = [];
  if (env.AGENTYARD_HARNESS_COMMAND_ARGS) {
    const parsed: unknown = JSON.parse(env.AGENTYARD_HARNESS_COMMAND_ARGS);
    if (!Array.isArray(parsed) || !parsed.every((a) => typeof a === 'string')) {
      throw new Error('AGENTYARD_HARNESS_COMMAND_ARGS must be a JSON array of strings');
    }
    commandArgs = parsed;
  }
  return {
    concurrency: overrides.concurrency ?? int(env, 'AGENTYARD_EXECUTOR_CONCURRENCY', 4, 0),
    harnesses,
    defaultHarness,
    bins: {
      claude: env.AGENTYARD_HARNESS_CLAUDE_BIN || 'claude',
      codex: env.AGENTYARD_HARNESS_CODEX_BIN || 'codex',
      gemini: env.AGENTYARD_HARNESS_GEMINI_BIN || 'gemini',
      command: env.AGENTYARD_HARNESS_COMMAND_BIN || '',
      agentyard: env.AGENTYARD_HARNESS_AGENTYARD_BIN || '',
      ...overrides.bins,
    },
    builtin: overrides.builtin ?? builtinAgentSettings(env),
    repositories: overrides.repositories ?? repositorySettings(env),
    commandArgs: overrides.commandArgs ?? commandArgs,
    leaseMs,
    heartbeatMs,
    pollMs: overrides.pollMs ?? int(env, 'AGENTYARD_EXECUTOR_POLL_MS', 1_000, 10),
    workspaceRoot: overrides.workspaceRoot ?? path.join(dataDir, 'workspaces'),
    configRoot: overrides.configRoot ?? path.join(dataDir, 'execution-files'),
    workspaceMaxBytes: overrides.workspaceMaxBytes ?? int(env, 'AGENTYARD_WORKSPACE_MAX_MB', 2048, 1) * 1024 * 1024,
    workspaceRetentionMs:
      overrides.workspaceRetentionMs ?? int(env, 'AGENTYARD_WORKSPACE_RETENTION_HOURS', 24, 0) * 3_600_000,
    killGraceMs: overrides.killGraceMs ?? 1_000,
    passEnv:
      overrides.passEnv ??
      (env.AGENTYARD_AGENT_PASS_ENV ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    limits: overrides.limits ?? serverLimits(env),
    sandbox: overrides.sandbox ?? sandboxSettings(dataDir, env),
    serverUrl: overrides.serverUrl ?? (() => env.AGENTYARD_PUBLIC_URL),
  };
}

/** The built-in agent's settings from the environment; a malformed value is an error at start. */
export function builtinAgentSettings(env: NodeJS.ProcessEnv): BuiltinAgentSettings {
  const baseUrl = env.AGENTYARD_OPENAI_BASE_URL?.trim() || undefined;
  if (baseUrl) {
    let url: URL;
    try {
      url = new URL(baseUrl);
    } catch {
      throw new Error(`AGENTYARD_OPENAI_BASE_URL is not a URL: "${baseUrl}"`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new Error(`AGENTYARD_OPENAI_BASE_URL must be an http or https URL, got "${baseUrl}"`);
    if (url.username || url.password)
      throw new Error('AGENTYARD_OPENAI_BASE_URL must not carry credentials: set AGENTYARD_OPENAI_API_KEY');
  }
  return {
    baseUrl,
    apiKey: env.AGENTYARD_OPENAI_API_KEY?.trim() || undefined,
    model: env.AGENTYARD_OPENAI_MODEL?.trim() || undefined,
    maxTurns: int(env, 'AGENTYARD_AGENT_MAX_TURNS', 100, 1),
    deadlineMs: int(env, 'AGENTYARD_AGENT_DEADLINE_SECONDS', 3600, 1) * 1000,
    requestTimeoutMs: int(env, 'AGENTYARD_OPENAI_TIMEOUT_SECONDS', 600, 1) * 1000,
  };
}
