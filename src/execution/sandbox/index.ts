/**
 * Where a locally executed agent runs: in its runner's container image when a container runtime is
 * configured and the run has an image, else in a bubblewrap sandbox, else (a laptop without bubblewrap)
 * unsandboxed, said plainly, unless a sandbox is required (AGENTYARD_REQUIRE_SANDBOX), when the run is
 * refused. See docs/security.md.
 */
import { homedir } from 'node:os';
import path from 'node:path';
import type { Invocation } from '../harnesses/types.ts';
import { constants } from 'node:fs';
import { access, writeFile } from 'node:fs/promises';
import type { Workspace } from '../workspace.ts';
import type { ExecutionLimits } from '../limits.ts';
import { sizeText } from '../limits.ts';
import {
  bubblewrapArgs,
  bubblewrapFeatures,
  identityFiles,
  probeBubblewrap,
  SANDBOX_PROXY_PORT,
  systemLayout,
} from './bubblewrap.ts';
import type { BubblewrapSpec } from './bubblewrap.ts';
import type { BubblewrapFeatures, ProbeResult } from './bubblewrap.ts';
import { inCgroup, planProcessLimit, removePidsCgroup } from './process-limit.ts';
import { CONTAINER_RUNTIMES, containerArgs, containerName, probeContainerRuntime } from './container.ts';
import type { ContainerSpec } from './container.ts';
import { relayBinaries } from './container-relay.ts';
import { resolveCommand } from './resolve.ts';

export interface SandboxSettings {
  /** false: agents run unsandboxed (`AGENTYARD_SANDBOX=none`). */
  enabled: boolean;
  /** Refuse to run an agent without a sandbox (`AGENTYARD_REQUIRE_SANDBOX=1`). */
  require: boolean;
  /** bubblewrap's executable (`AGENTYARD_BWRAP_PATH`, default /usr/bin/bwrap). */
  bwrapPath: string;
  /** `docker` or `podman` (`AGENTYARD_CONTAINER_RUNTIME`): runs with a runner image execute in it. */
  containerRuntime: string | undefined;
  /** The image of runs whose runner names none, when a container runtime is set (`AGENTYARD_CONTAINER_IMAGE`). */
  containerImage: string | undefined;
  /** Extra directories bound read-only into the bubblewrap sandbox (`AGENTYARD_SANDBOX_READ_ONLY_PATHS`). */
  readOnlyPaths: string[];
  /** The agent's uid and gid inside the sandbox (`AGENTYARD_SANDBOX_UID`, `…_GID`, default 1000). */
  uid: number;
  gid: number;
  /**
   * Covered inside a bubblewrap sandbox when a read-only bind would show them: the data directory, the server's
   * home and working directory.
   */
  hidden: string[];
  /**
   * `isolated` (default): a bubblewrap sandbox has its own network namespace and reaches out only through the
   * execution's egress proxy; `host` (`AGENTYARD_SANDBOX_NETWORK=host`): the host's network, no egress policy.
   */
  network: 'isolated' | 'host';
  /** Non-public `host:port`s agents may reach through the proxy whatever the policy (`AGENTYARD_EGRESS_ALLOW_ADDRESSES`). */
  egressAllowAddresses: string[];
  /** socat, the relay of the proxy inside the sandbox (`AGENTYARD_SOCAT_PATH`, default /usr/bin/socat). */
  socatPath: string;
  /**
   * `tmpfs` (default): a bubblewrap sandbox's workspace is a tmpfs of the workspace limit, copied in and out, so
   * the kernel holds the limit; `bind` (`AGENTYARD_SANDBOX_WORKSPACE=bind`): the host's workspace bound
   * read-write, its disk use measured every 1–5 s.
   */
  workspace: 'tmpfs' | 'bind';
}

function flag(raw: string | undefined): boolean {
  return raw !== undefined && /^(1|true|yes|on)$/i.test(raw.trim());
}

function id(env: NodeJS.ProcessEnv, name: string): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return 1000;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > 65_535)
    throw new Error(`${name} must be an integer from 1 to 65535, got "${raw}"`);
  return value;
}

export function sandboxSettings(dataDir: string, env: NodeJS.ProcessEnv): SandboxSettings {
  const mode = (env.AGENTYARD_SANDBOX ?? 'auto').trim().toLowerCase() || 'auto';
  if (mode !== 'auto' && mode !== 'none')
    throw new Error(`AGENTYARD_SANDBOX must be auto or none, got "${env.AGENTYARD_SANDBOX}"`);
  const runtime = env.AGENTYARD_CONTAINER_RUNTIME?.trim() || undefined;
  if (runtime && !(CONTAINER_RUNTIMES as readonly string[]).includes(path.basename(runtime)))
    throw new Error(`AGENTYARD_CONTAINER_RUNTIME must be docker or podman (or a path to one), got "${runtime}"`);
  const readOnlyPaths = (env.AGENTYARD_SANDBOX_READ_ONLY_PATHS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const p of readOnlyPaths)
    if (!path.isAbsolute(p)) throw new Error(`AGENTYARD_SANDBOX_READ_ONLY_PATHS: "${p}" is not an absolute path`);
  const network = (env.AGENTYARD_SANDBOX_NETWORK ?? 'isolated').trim().toLowerCase() || 'isolated';
  if (network !== 'isolated' && network !== 'host')
    throw new Error(`AGENTYARD_SANDBOX_NETWORK must be isolated or host, got "${env.AGENTYARD_SANDBOX_NETWORK}"`);
  const egressAllowAddresses = (env.AGENTYARD_EGRESS_ALLOW_ADDRESSES ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const a of egressAllowAddresses)
    if (!/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/.test(a))
      throw new Error(`AGENTYARD_EGRESS_ALLOW_ADDRESSES: "${a}" is not host:port`);
  const workspace = (env.AGENTYARD_SANDBOX_WORKSPACE ?? 'tmpfs').trim().toLowerCase() || 'tmpfs';
  if (workspace !== 'tmpfs' && workspace !== 'bind')
    throw new Error(`AGENTYARD_SANDBOX_WORKSPACE must be tmpfs or bind, got "${env.AGENTYARD_SANDBOX_WORKSPACE}"`);
  return {
    network,
    workspace,
    egressAllowAddresses,
    socatPath: env.AGENTYARD_SOCAT_PATH?.trim() || '/usr/bin/socat',
    enabled: mode === 'auto',
    require: flag(env.AGENTYARD_REQUIRE_SANDBOX),
    bwrapPath: env.AGENTYARD_BWRAP_PATH?.trim() || '/usr/bin/bwrap',
    containerRuntime: runtime,
    containerImage: env.AGENTYARD_CONTAINER_IMAGE?.trim() || undefined,
    readOnlyPaths,
    uid: id(env, 'AGENTYARD_SANDBOX_UID'),
    gid: id(env, 'AGENTYARD_SANDBOX_GID'),
    hidden: [path.resolve(dataDir), homedir(), process.cwd()],
  };
}

/** What a host offers: bubblewrap works, or why not. Probed once per executable and uid. */
const probes = new Map<string, Promise<ProbeResult>>();

export function bubblewrapAvailability(settings: SandboxSettings): Promise<ProbeResult> {
  if (!settings.enabled) return Promise.resolve({ ok: false, reason: 'the sandbox is off (AGENTYARD_SANDBOX=none)' });
  const key = `${settings.bwrapPath}\0${settings.uid}:${settings.gid}`;
  let probe = probes.get(key);
  if (!probe) {
    probe = probeBubblewrap(settings.bwrapPath, settings.uid, settings.gid);
    probes.set(key, probe);
  }
  return probe;
}

/** One line for the start-up log: how this process's agents will run. */
export async function describeSandbox(settings: SandboxSettings): Promise<{ level: 'info' | 'warn'; message: string }> {
  const bwrap = await bubblewrapAvailability(settings);
  const container = settings.containerRuntime
    ? `runs with a runner image execute in ${settings.containerRuntime} containers; others `
    : 'agents ';
  if (bwrap.ok) return { level: 'info', message: `${container}run in a bubblewrap sandbox (${settings.bwrapPath})` };
  return settings.require
    ? {
        level: 'warn',
        message: `${container}cannot run: ${bwrap.reason}, and AGENTYARD_REQUIRE_SANDBOX is set (such runs end ERROR)`,
      }
    : { level: 'warn', message: `${container}run UNSANDBOXED, with this server's user and disk: ${bwrap.reason}` };
}

/** What a container runtime's client needs of the server's environment to reach its engine (not passed into the container). */
const RUNTIME_ENV_VARS = [
  'DOCKER_HOST',
  'DOCKER_CONTEXT',
  'DOCKER_CONFIG',
  'DOCKER_TLS_VERIFY',
  'DOCKER_CERT_PATH',
  'CONTAINER_HOST',
  'CONTAINER_CONNECTION',
  'XDG_RUNTIME_DIR',
];

function runtimeEnvironment(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of RUNTIME_ENV_VARS) if (process.env[name] !== undefined) env[name] = process.env[name]!;
  return env;
}

export type SandboxKind = 'container' | 'bubblewrap' | 'none';

/** How an agent is started, and what its run says about it. */
export type SandboxedInvocation =
  | {
      kind: SandboxKind;
      command: string;
      args: string[];
      /** Added to the agent's environment. */
      env: Record<string, string>;
      /** "in a bubblewrap sandbox…", "unsandboxed: <why>": how the agent runs, for the run's status message. */
      description: string;
      /** Which limits hold, and how ("at most 256 processes (pids cgroup)", "…not enforced: <why>"). */
      limits?: string;
      /** Undoes what the sandbox made for the execution (its cgroup), once the agent has exited. */
      cleanup?: () => Promise<void>;
      /**
       * The workspace is a tmpfs of this many bytes inside the sandbox, copied in and out by the workspace
       * wrapper, which speaks on fd 3 (sandbox/workspace-wrapper.ts).
       */
      workspaceBytes?: number;
    }
  | { kind: 'refused'; message: string }
  | { kind: 'not_found' };

export interface SandboxRequest {
  invocation: Invocation;
  workspace: Workspace;
  /** The agent's environment (its PATH finds the command and its interpreter). */
  env: Record<string, string>;
  /** The runner's container image, when the run has one. */
  image: string | undefined;
  executionId: string;
  /** What the execution may use (processes, /tmp, user namespaces, the largest file). */
  limits: ExecutionLimits;
  /**
   * The execution's network in a bubblewrap sandbox: through its egress proxy (the proxy's socket directory),
   * none at all, or (undefined) the host's.
   */
  egress?: { kind: 'proxy'; socketDir: string; policy: string } | { kind: 'none'; policy: string };
}

/** The agent's environment naming the egress proxy, in every spelling clients read. */
export function proxyEnvironment(): Record<string, string> {
  const url = `http://127.0.0.1:${SANDBOX_PROXY_PORT}`;
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    ALL_PROXY: url,
    all_proxy: url,
    NO_PROXY: '',
    no_proxy: '',
    // Node's own fetch and http read the variables above only when told to (Node >= 22.21 / 24.5)
    NODE_USE_ENV_PROXY: '1',
  };
}

/** Whether socat, the relay of the egress proxy inside the sandbox, can be run. */
async function hasSocat(socat: string): Promise<boolean> {
  try {
    await access(socat, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

const features = new Map<string, Promise<BubblewrapFeatures>>();

/** The options this bubblewrap has, read once per executable. */
function featuresOf(bwrap: string): Promise<BubblewrapFeatures> {
  let found = features.get(bwrap);
  if (!found) {
    found = bubblewrapFeatures(bwrap);
    features.set(bwrap, found);
  }
  return found;
}

/**
 * A container's network: its own namespace (`--network none`) whose only way out is the egress proxy, relayed by
 * this host's socat (container-relay.ts); none at all when the policy says so or the relay cannot be had.
 */
async function containerEgress(
  settings: SandboxSettings,
  req: SandboxRequest,
): Promise<{ network?: ContainerSpec['network']; env: Record<string, string>; note?: string }> {
  if (req.egress?.kind === 'none')
    return { network: { kind: 'none' }, env: {}, note: 'network: none (own network namespace)' };
  if (req.egress?.kind !== 'proxy')
    return {
      env: {},
      note:
        settings.network === 'host'
          ? "network: the container runtime's (AGENTYARD_SANDBOX_NETWORK=host)"
          : "network: the container runtime's",
    };
  const relay = (await hasSocat(settings.socatPath)) ? await relayBinaries(settings.socatPath) : undefined;
  if (!relay)
    return {
      network: { kind: 'none' },
      env: {},
      note: `network: none: ${settings.socatPath} (socat, the egress proxy's relay) or its libraries (ldd) are missing`,
    };
  return {
    network: { kind: 'proxy', socketDir: req.egress.socketDir, relay },
    env: proxyEnvironment(),
    note: `network: ${req.egress.policy}, only through the egress proxy (own network namespace)`,
  };
}

/** Wraps an agent's invocation in the sandbox this host offers. */
export async function sandboxInvocation(settings: SandboxSettings, req: SandboxRequest): Promise<SandboxedInvocation> {
  const { invocation, workspace } = req;
  const image = req.image ?? settings.containerImage;
  if (settings.enabled && settings.containerRuntime && image) {
    const probe = await probeContainerRuntime(settings.containerRuntime);
    if (!probe.ok) return { kind: 'refused', message: `the run's container could not be started: ${probe.reason}` };
    const egress = await containerEgress(settings, req);
    // the image's own PATH and temporary directory stay; the rest of the agent's environment is passed by name
    const envNames = Object.keys({ ...req.env, ...invocation.env, ...egress.env })
      .filter((n) => n !== 'PATH' && n !== 'TMPDIR')
      .sort();
    return {
      kind: 'container',
      command: settings.containerRuntime,
      args: containerArgs({
        runtime: settings.containerRuntime,
        image,
        name: containerName(req.executionId),
        // a command of this host (the built-in agent's Node) is the image's own on its PATH
        command: invocation.readOnly?.length ? path.basename(invocation.command) : invocation.command,
        args: invocation.args,
        workspace: workspace.dir,
        configDir: workspace.configDir,
        readOnly: invocation.readOnly ?? [],
        envNames,
        uid: process.getuid?.() ?? 1000,
        gid: process.getgid?.() ?? 1000,
        limits: req.limits,
        ...(egress.network ? { network: egress.network } : {}),
      }),
      env: { ...runtimeEnvironment(), ...egress.env },
      description: `in a ${path.basename(settings.containerRuntime)} container (image ${image})`,
      ...(egress.note ? { limits: egress.note } : {}),
    };
  }
  const bwrap = await bubblewrapAvailability(settings);
  if (!bwrap.ok) {
    if (settings.require)
      return {
        kind: 'refused',
        message: `no sandbox is available (${bwrap.reason}) and AGENTYARD_REQUIRE_SANDBOX is set: the agent was not started`,
      };
    return {
      kind: 'none',
      command: invocation.command,
      args: invocation.args,
      env: {},
      description: `unsandboxed: ${bwrap.reason}`,
    };
  }
  const resolved = await resolveCommand(invocation.command, req.env.PATH ?? '', workspace.dir);
  if (!resolved) return { kind: 'not_found' };
  // in the execution's configuration directory, which the server alone writes: never in the workspace
  const ids = identityFiles(settings.uid, settings.gid, workspace.home);
  const passwdFile = path.join(workspace.configDir, 'passwd');
  const groupFile = path.join(workspace.configDir, 'group');
  await writeFile(passwdFile, ids.passwd, { mode: 0o600, flag: 'wx' });
  await writeFile(groupFile, ids.group, { mode: 0o600, flag: 'wx' });
  const { limits } = req;
  const can = await featuresOf(settings.bwrapPath);
  const plan = await planProcessLimit(limits, req.executionId);
  const notes = [...plan.notes];
  notes.push(can.size ? `/tmp ${sizeText(limits.tmpBytes)}` : '/tmp unsized (bubblewrap < 0.5 has no --size)');
  const workspaceBytes = can.size && settings.workspace === 'tmpfs' ? limits.workspaceBytes : undefined;

  if (limits.nestedUserNamespaces) notes.push('user namespaces allowed');
  else notes.push(can.disableUserns ? 'no user namespaces' : 'user namespaces possible (bubblewrap < 0.8)');
  let network: BubblewrapSpec['network'];
  let networkEnv: Record<string, string> = {};
  if (req.egress?.kind === 'none') {
    network = { kind: 'none' };
    notes.push('network: none (own network namespace)');
  } else if (req.egress?.kind === 'proxy') {
    if (await hasSocat(settings.socatPath)) {
      network = { kind: 'proxy', socketDir: req.egress.socketDir, socat: settings.socatPath };
      networkEnv = proxyEnvironment();
      notes.push(`network: ${req.egress.policy}, only through the egress proxy (own network namespace)`);
    } else {
      network = { kind: 'none' };
      notes.push(`network: none: ${settings.socatPath} (socat, the egress proxy's relay) is missing`);
    }
  } else {
    notes.push(
      settings.network === 'host' ? "network: the host's (AGENTYARD_SANDBOX_NETWORK=host)" : "network: the host's",
    );
  }
  notes.push(
    workspaceBytes !== undefined
      ? `workspace ${sizeText(workspaceBytes)} (a filesystem of that size)`
      : `workspace ${sizeText(limits.workspaceBytes)}, measured${can.size ? ' (AGENTYARD_SANDBOX_WORKSPACE=bind)' : ' (bubblewrap < 0.5 has no --size)'}`,
  );
  const args = bubblewrapArgs({
    bwrap: settings.bwrapPath,
    command: resolved.executable,
    args: invocation.args,
    workspace: workspace.dir,
    configDir: workspace.configDir,
    readOnly: [...resolved.readOnly, ...(invocation.readOnly ?? []), ...settings.readOnlyPaths],
    hidden: settings.hidden,
    uid: settings.uid,
    gid: settings.gid,
    passwdFile,
    groupFile,
    system: await systemLayout(),
    ...(can.size ? { tmpBytes: limits.tmpBytes } : {}),
    ...(workspaceBytes !== undefined ? { workspaceBytes } : {}),
    disableUserns: can.disableUserns && !limits.nestedUserNamespaces,
    wrapper: plan.wrapper,
    ...(network ? { network } : {}),
  });
  const launch = plan.cgroup ? inCgroup(plan.cgroup, settings.bwrapPath, args) : { command: settings.bwrapPath, args };
  const cgroup = plan.cgroup;
  return {
    kind: 'bubblewrap',
    command: launch.command,
    args: launch.args,
    env: { TMPDIR: '/tmp', USER: 'agent', LOGNAME: 'agent', ...networkEnv },
    description: `in a bubblewrap sandbox (uid ${settings.uid}; only its workspace writable)`,
    limits: notes.join('; '),
    ...(cgroup ? { cleanup: () => removePidsCgroup(cgroup) } : {}),
    ...(workspaceBytes !== undefined ? { workspaceBytes } : {}),
  };
}
