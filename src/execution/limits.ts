/**
 * What one execution may use: processes, /tmp, workspace disk, events and output, and whether it may create
 * user namespaces. The server's settings are the defaults and the ceilings; a runner's `x-agentyard-limits`
 * (runners/<name>.yaml) may tighten them for the runs it executes, never loosen them (docs/execution.md).
 */

import type { RunnerLimits } from '../definitions/model.ts';

export type { RunnerLimits };

/** The limits an execution runs under. */
export interface ExecutionLimits {
  /** Processes and threads at once in the sandbox (a pids cgroup, else RLIMIT_NPROC). */
  processes: number;
  /** Size of the sandbox's private /tmp (and /dev/shm). */
  tmpBytes: number;
  /** Disk the workspace may use, deleted-but-open files included. */
  workspaceBytes: number;
  /** Events one execution may report. */
  events: number;
  /** Bytes of stdout and stderr one execution may print. */
  outputBytes: number;
  /** The agent may create user namespaces. */
  nestedUserNamespaces: boolean;
}

/** The server's limits (environment variables): the defaults, and the ceilings of a runner's. */
export interface ServerLimits extends Omit<ExecutionLimits, 'workspaceBytes' | 'nestedUserNamespaces'> {
  /** A runner may let its agents create user namespaces (`AGENTYARD_SANDBOX_ALLOW_NESTED_USERNS=1`). */
  allowNestedUserNamespaces: boolean;
}

const MIB = 1024 * 1024;

function positive(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got "${raw}"`);
  return value;
}

export function serverLimits(env: NodeJS.ProcessEnv): ServerLimits {
  return {
    processes: positive(env, 'AGENTYARD_SANDBOX_MAX_PROCESSES', 256),
    tmpBytes: positive(env, 'AGENTYARD_SANDBOX_TMP_MB', 256) * MIB,
    events: positive(env, 'AGENTYARD_EXECUTION_MAX_EVENTS', 10_000),
    outputBytes: positive(env, 'AGENTYARD_EXECUTION_MAX_OUTPUT_MB', 16) * MIB,
    allowNestedUserNamespaces: /^(1|true|yes|on)$/i.test(env.AGENTYARD_SANDBOX_ALLOW_NESTED_USERNS?.trim() ?? ''),
  };
}

const COUNT_KEYS = ['processes', 'tmpMiB', 'workspaceMiB', 'events', 'outputMiB'] as const;

/** A runner's limits read back from a stored definition: anything not a positive integer (or boolean) is left out. */
export function runnerLimitsFrom(value: unknown): RunnerLimits | undefined {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const v = value as Record<string, unknown>;
  const out: RunnerLimits = {};
  for (const key of COUNT_KEYS) {
    const n = v[key];
    if (typeof n === 'number' && Number.isSafeInteger(n) && n > 0) out[key] = n;
  }
  if (typeof v.nestedUserNamespaces === 'boolean') out.nestedUserNamespaces = v.nestedUserNamespaces;
  return Object.keys(out).length ? out : undefined;
}

const tighter = (server: number, runner: number | undefined, unit = 1): number =>
  runner === undefined ? server : Math.min(server, runner * unit);

/** The limits of an execution: the server's, tightened by its runner's. */
export function effectiveLimits(
  server: ServerLimits,
  workspaceMaxBytes: number,
  runner: RunnerLimits | undefined,
): ExecutionLimits {
  return {
    processes: tighter(server.processes, runner?.processes),
    tmpBytes: tighter(server.tmpBytes, runner?.tmpMiB, MIB),
    workspaceBytes: tighter(workspaceMaxBytes, runner?.workspaceMiB, MIB),
    events: tighter(server.events, runner?.events),
    outputBytes: tighter(server.outputBytes, runner?.outputMiB, MIB),
    nestedUserNamespaces: server.allowNestedUserNamespaces && runner?.nestedUserNamespaces === true,
  };
}

/** "16 MiB", "256 KiB", "300 bytes": a size for a message. */
export function sizeText(bytes: number): string {
  if (bytes % MIB === 0) return `${bytes / MIB} MiB`;
  if (bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}
