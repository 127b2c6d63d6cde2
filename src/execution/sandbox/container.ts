/**
 * A run in its runner's container image through a container runtime's client (`docker` or `podman`): the
 * workspace mounted at its own path as the working directory, the image's filesystem read-only with a
 * private /tmp, every capability dropped, this process's uid, and the agent's environment passed by name
 * (values come from the client's environment, never the command line).
 */
import { commandEnv, execCommand, failureDetail, succeeded } from '../../kernel/run-command.ts';
import { SANDBOX_PROXY_DIR } from './bubblewrap.ts';
import { containerRelayScript, relayVolumes } from './container-relay.ts';
import type { RelayBinaries } from './container-relay.ts';

export const CONTAINER_RUNTIMES = ['docker', 'podman'] as const;
export type ContainerRuntime = (typeof CONTAINER_RUNTIMES)[number];

export interface ContainerSpec {
  /** The runtime's client executable. */
  runtime: string;
  image: string;
  /** Container name (so a stopped client's container can be found and killed). */
  name: string;
  command: string;
  args: readonly string[];
  workspace: string;
  /** The execution's configuration directory (MCP configuration), mounted read-only at its own path. */
  configDir: string;
  /** Host directories mounted read-only at their own paths. */
  readOnly?: readonly string[];
  /** Names of the environment variables the agent gets (their values stay in the client's environment). */
  envNames: readonly string[];
  uid: number;
  gid: number;
  /** Processes, /tmp and the largest file (`--pids-limit`, a sized tmpfs, `--ulimit fsize`). */
  limits?: { processes: number; tmpBytes: number; workspaceBytes: number };
  /**
   * Its own network namespace (`--network none`): `proxy`, the egress proxy's socket directory mounted at
   * /run/agentyard-egress and relayed to 127.0.0.1:3128 (container-relay.ts); `none`, no way out. Undefined:
   * the runtime's default network.
   */
  network?: { kind: 'proxy'; socketDir: string; relay: RelayBinaries } | { kind: 'none' };
}

/** The client's command line for a spec (after the runtime executable). */
export function containerArgs(spec: ContainerSpec): string[] {
  const a = [
    'run',
    '--rm',
    '--interactive',
    '--init',
    '--name',
    spec.name,
    '--user',
    `${spec.uid}:${spec.gid}`,
    '--read-only',
    '--tmpfs',
    spec.limits ? `/tmp:rw,size=${spec.limits.tmpBytes}` : '/tmp',
    '--cap-drop',
    'ALL',
    '--security-opt',
    'no-new-privileges',
    '--volume',
    `${spec.workspace}:${spec.workspace}:rw`,
    '--volume',
    `${spec.configDir}:${spec.configDir}:ro`,
    '--workdir',
    spec.workspace,
  ];
  if (spec.limits) {
    a.push('--pids-limit', String(spec.limits.processes));
    a.push('--ulimit', `fsize=${spec.limits.workspaceBytes}:${spec.limits.workspaceBytes}`);
  }
  for (const dir of spec.readOnly ?? []) a.push('--volume', `${dir}:${dir}:ro`);
  for (const name of spec.envNames) a.push('--env', name);
  const network = spec.network;
  if (network) a.push('--network', 'none');
  if (network?.kind === 'proxy') {
    a.push('--volume', `${network.socketDir}:${SANDBOX_PROXY_DIR}:ro`);
    for (const volume of relayVolumes(network.relay)) a.push('--volume', volume);
    a.push('--', spec.image, '/bin/sh', '-c', containerRelayScript(), 'agentyard-egress-relay');
    a.push(spec.command, ...spec.args);
    return a;
  }
  a.push('--', spec.image, spec.command, ...spec.args);
  return a;
}

export type ContainerProbe = { ok: true } | { ok: false; reason: string };

/** Whether the runtime's client is installed and reaches its engine (`<runtime> info`). */
export async function probeContainerRuntime(
  runtime: string,
  env: NodeJS.ProcessEnv = process.env,
  timeoutMs = 10_000,
): Promise<ContainerProbe> {
  const outcome = await execCommand({
    command: runtime,
    args: ['info'],
    cwd: process.cwd(),
    env: commandEnv(env),
    blockTimeoutMs: timeoutMs,
  });
  if (succeeded(outcome)) return { ok: true };
  if (outcome.startError === 'ENOENT')
    return { ok: false, reason: `the container runtime client "${runtime}" is not installed` };
  return {
    ok: false,
    reason: `the container runtime ${runtime} is unreachable (${failureDetail(outcome).slice(0, 200)})`,
  };
}

/** The container's name for an execution (`docker rm -f <name>` ends it when its client is gone). */
export function containerName(executionId: string): string {
  return `agentyard-${executionId.toLowerCase()}`;
}

/** Removes an execution's container, whatever its state: a client killed with SIGKILL leaves it running. */
export async function removeContainer(runtime: string, executionId: string, timeoutMs = 10_000): Promise<void> {
  await execCommand({
    command: runtime,
    args: ['rm', '--force', containerName(executionId)],
    cwd: process.cwd(),
    env: commandEnv(),
    blockTimeoutMs: timeoutMs,
  });
}
