/**
 * The bubblewrap sandbox of a locally executed agent: a fresh user namespace with an unprivileged uid, new
 * pid/ipc/uts namespaces (its own /proc), the system directories and a short list of /etc files read-only,
 * a private /tmp, the tool directories its command needs read-only, and the run's workspace as the only
 * writable bind, at its own path. Nothing else of the host's disk is mounted. With a `network`, it gets its own
 * network namespace (loopback only), and its way out is the execution's egress proxy, whose socket directory
 * is bound in and relayed to 127.0.0.1:3128 by socat (egress/proxy.ts).
 */
import { lstat, readlink } from 'node:fs/promises';
import { execCommand, failureDetail, succeeded } from '../../kernel/run-command.ts';
import { SYSTEM_DIRS, under } from './resolve.ts';
import { SANDBOX_SEED_DIR, workspaceWrapperArgs } from './workspace-wrapper.ts';

/** /etc entries an agent's tools need (name resolution, TLS roots, time zone, the loader); bound when present. */
export const ETC_ENTRIES = [
  'resolv.conf',
  'hosts',
  'host.conf',
  'nsswitch.conf',
  'gai.conf',
  'services',
  'protocols',
  'ssl',
  'ca-certificates',
  'ca-certificates.conf',
  'pki',
  'crypto-policies',
  'localtime',
  'timezone',
  'alternatives',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'mime.types',
  'os-release',
  'debian_version',
  'gitconfig',
] as const;

export interface BubblewrapSpec {
  bwrap: string;
  /** The executable's real path and its arguments. */
  command: string;
  args: readonly string[];
  workspace: string;
  /** The execution's configuration directory (outside the workspace), bound read-only at its own path. */
  configDir: string;
  /** Directories bound read-only at their own paths (the command's tool directories and configured extras). */
  readOnly: readonly string[];
  /** Paths hidden by an empty tmpfs when a read-only bind would show them (the data directory, the server's home). */
  hidden: readonly string[];
  uid: number;
  gid: number;
  /** Files of the configuration directory bound over /etc/passwd and /etc/group (the sandbox's own user). */
  passwdFile: string;
  groupFile: string;
  /** How each system directory is on this host: a directory to bind, or a symlink to recreate. */
  system: readonly SystemEntry[];
  /** Size of the private /tmp and /dev/shm (bubblewrap's `--size`); undefined: unsized (bubblewrap < 0.5). */
  tmpBytes?: number;
  /** `--disable-userns`: the agent cannot create user namespaces (bubblewrap >= 0.8). */
  disableUserns?: boolean;
  /**
   * The workspace as a tmpfs of this many bytes at its own path, filled from the host's workspace (bound
   * read-only at SANDBOX_SEED_DIR) by the workspace wrapper, which copies it out at the end (see
   * workspace-wrapper.ts). Undefined: the host's workspace is bound read-write.
   */
  workspaceBytes?: number;
  /** Run inside the sandbox before the command, which it execs (`prlimit --nproc=… --fsize=… --`). */
  wrapper?: readonly string[];
  /**
   * Its own network namespace: `proxy`, the egress proxy's socket directory, relayed to `127.0.0.1:3128` by
   * socat; `none`, no way out at all. Undefined: the host's network.
   */
  network?: { kind: 'proxy'; socketDir: string; socat: string } | { kind: 'none' };
}

/** Where the egress proxy's socket directory is inside the sandbox, and the port its relay listens on. */
export const SANDBOX_PROXY_DIR = '/run/agentyard-egress';
export const SANDBOX_PROXY_PORT = 3128;

/**
 * The relay that makes the proxy's unix socket `127.0.0.1:3128` inside the network namespace, started before
 * the command (which the script execs once the relay listens: a client never finds the port closed).
 */
function relayScript(socat: string, socketPath: string): string {
  const hex = SANDBOX_PROXY_PORT.toString(16).toUpperCase().padStart(4, '0');
  return [
    `${socat} TCP4-LISTEN:${SANDBOX_PROXY_PORT},bind=127.0.0.1,fork,reuseaddr,backlog=4096 UNIX-CONNECT:${socketPath} </dev/null >/dev/null 2>&1 &`,
    'i=0',
    `while ! grep -q ':${hex} 00000000:0000 0A' /proc/net/tcp 2>/dev/null && [ $i -lt 500 ]; do i=$((i+1)); sleep 0.01; done`,
    'exec "$@"',
  ].join('\n');
}

/** What this bubblewrap offers beyond the basics (`bwrap --help`). */
export interface BubblewrapFeatures {
  /** `--size` for a tmpfs (0.5). */
  size: boolean;
  /** `--disable-userns` (0.8). */
  disableUserns: boolean;
}

/** Size of the sandbox's /run (sockets and pid files). */
const RUN_BYTES = 1024 * 1024;

export type SystemEntry = { path: string; kind: 'dir' } | { path: string; kind: 'symlink'; target: string };

/** How the system directories are on this host (on merged-/usr systems /bin and /lib are symlinks). */
export async function systemLayout(): Promise<SystemEntry[]> {
  const out: SystemEntry[] = [];
  for (const dir of SYSTEM_DIRS) {
    try {
      const info = await lstat(dir);
      if (info.isSymbolicLink()) out.push({ path: dir, kind: 'symlink', target: await readlink(dir) });
      else if (info.isDirectory()) out.push({ path: dir, kind: 'dir' });
    } catch {
      // absent here
    }
  }
  return out;
}

/** The passwd and group lines of the sandbox's user, whose home is the agent's HOME. */
export function identityFiles(uid: number, gid: number, home: string): { passwd: string; group: string } {
  return {
    passwd: `agent:x:${uid}:${gid}:Agentyard agent:${home}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `agent:x:${gid}:\nnogroup:x:65534:\n`,
  };
}

/** bubblewrap's command line for a spec (the argv after the bwrap executable). */
export function bubblewrapArgs(spec: BubblewrapSpec): string[] {
  const relay =
    spec.network?.kind === 'proxy'
      ? ['/bin/sh', '-c', relayScript(spec.network.socat, `${SANDBOX_PROXY_DIR}/proxy.sock`), 'agentyard-egress-relay']
      : [];
  return [
    ...namespaceArgs(spec),
    ...filesystemArgs(spec),
    '--',
    ...relay,
    ...(spec.wrapper ?? []),
    ...(spec.workspaceBytes === undefined ? [] : workspaceWrapperArgs(spec.workspace)),
    spec.command,
    ...spec.args,
  ];
}

/** New user (with the agent's ids), pid, ipc, uts and cgroup namespaces, and network with a `network`. */
function namespaceArgs(spec: BubblewrapSpec): string[] {
  const a = ['--unshare-user', '--uid', String(spec.uid), '--gid', String(spec.gid)];
  if (spec.network) a.push('--unshare-net');
  if (spec.disableUserns) a.push('--disable-userns');
  a.push('--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try', '--hostname', 'agentyard-sandbox');
  a.push('--die-with-parent', '--new-session');
  return a;
}

/** A tmpfs, of `bytes` when bubblewrap can size it. */
function tmpfs(dir: string, bytes: number | undefined): string[] {
  return bytes === undefined ? ['--tmpfs', dir] : ['--size', String(bytes), '--tmpfs', dir];
}

function filesystemArgs(spec: BubblewrapSpec): string[] {
  const a: string[] = [];
  for (const entry of spec.system) {
    if (entry.kind === 'dir') a.push('--ro-bind', entry.path, entry.path);
    else a.push('--symlink', entry.target, entry.path);
  }
  for (const name of ETC_ENTRIES) a.push('--ro-bind-try', `/etc/${name}`, `/etc/${name}`);
  a.push('--ro-bind', spec.passwdFile, '/etc/passwd', '--ro-bind', spec.groupFile, '/etc/group');
  // RAM the agent can fill: /tmp (with /var/tmp a link to it), /dev/shm and /run, each sized; /dev itself read-only
  a.push('--proc', '/proc', '--dev', '/dev', ...tmpfs('/dev/shm', spec.tmpBytes), '--remount-ro', '/dev');
  a.push(...tmpfs('/tmp', spec.tmpBytes), '--symlink', '/tmp', '/var/tmp');
  a.push(...tmpfs('/run', spec.tmpBytes === undefined ? undefined : RUN_BYTES));
  if (spec.network?.kind === 'proxy') a.push('--ro-bind', spec.network.socketDir, SANDBOX_PROXY_DIR);
  // parents before children, so a deeper bind is not covered by a shallower one
  const readOnly = [...new Set(spec.readOnly)].sort((x, y) => x.length - y.length);
  for (const dir of readOnly) a.push('--ro-bind', dir, dir);
  for (const hide of spec.hidden) {
    if (readOnly.some((dir) => dir !== hide && under(dir, hide))) a.push('--tmpfs', hide);
  }
  // the server's files for this execution, read-only, after the tmpfs that hides the data directory
  a.push('--ro-bind', spec.configDir, spec.configDir);
  // the sandbox's own root (the mount points above) read-only: the workspace and /tmp are the writable places
  if (spec.workspaceBytes === undefined) a.push('--bind', spec.workspace, spec.workspace);
  else {
    // the workspace's disk limit as the kernel holds it: a filesystem of that size, filled from the host's
    a.push('--ro-bind', spec.workspace, SANDBOX_SEED_DIR, ...tmpfs(spec.workspace, spec.workspaceBytes));
  }
  a.push('--remount-ro', '/', '--chdir', spec.workspace);
  a.push('--setenv', 'TMPDIR', '/tmp');
  return a;
}

/** Reads which options this bubblewrap has from its `--help`; none when it cannot be run. */
export async function bubblewrapFeatures(bwrap: string, timeoutMs = 10_000): Promise<BubblewrapFeatures> {
  const outcome = await execCommand(probe(bwrap, ['--help'], timeoutMs));
  const help = `${outcome.stdout.toString('utf8')}${outcome.stderr}`;
  return { size: /^\s*--size\b/m.test(help), disableUserns: /^\s*--disable-userns\b/m.test(help) };
}

/** A probe of bubblewrap: started from the spawner (src/kernel/run-command.ts), system directories on `PATH`. */
function probe(bwrap: string, args: string[], timeoutMs: number) {
  return { command: bwrap, args, cwd: '/', env: { PATH: '/usr/bin:/bin' }, blockTimeoutMs: timeoutMs };
}

export type ProbeResult = { ok: true } | { ok: false; reason: string };

/**
 * Whether bubblewrap can make the namespaces the sandbox uses here: it may be missing, or user namespaces may
 * be off (a kernel setting, or a container that forbids them).
 */
export async function probeBubblewrap(
  bwrap: string,
  uid: number,
  gid: number,
  timeoutMs = 10_000,
): Promise<ProbeResult> {
  const args = [
    '--unshare-user',
    '--uid',
    String(uid),
    '--gid',
    String(gid),
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--ro-bind',
    '/',
    '/',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--die-with-parent',
    '--new-session',
    'true',
  ];
  const outcome = await execCommand(probe(bwrap, args, timeoutMs));
  if (succeeded(outcome)) return { ok: true };
  if (outcome.startError === 'ENOENT') return { ok: false, reason: `bubblewrap not found at ${bwrap}` };
  if (outcome.startError === 'EACCES') return { ok: false, reason: `bubblewrap at ${bwrap} is not executable` };
  const detail = failureDetail(outcome);
  return { ok: false, reason: `bubblewrap cannot create its namespaces here (${detail.slice(0, 200)})` };
}
