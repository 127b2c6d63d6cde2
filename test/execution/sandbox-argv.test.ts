/**
 * How the sandbox's command lines are built (bubblewrap's and a container runtime's), how a command and its
 * interpreter are resolved into read-only binds, and the settings' checks. The runs themselves are in
 * sandbox.test.ts; the container path is tested only this far (no container engine runs here).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bubblewrapArgs, identityFiles, probeBubblewrap } from '../../src/execution/sandbox/bubblewrap.ts';
import type { BubblewrapSpec } from '../../src/execution/sandbox/bubblewrap.ts';
import {
  containerArgs,
  containerName,
  probeContainerRuntime,
  removeContainer,
} from '../../src/execution/sandbox/container.ts';
import { sandboxSettings } from '../../src/execution/sandbox/index.ts';
import { findOnPath, resolveCommand } from '../../src/execution/sandbox/resolve.ts';
import { launcherExit } from '../../src/execution/runner.ts';
import { SANDBOX_SEED_DIR, workspaceWrapperArgs } from '../../src/execution/sandbox/workspace-wrapper.ts';
import { AGENTS, FAKE } from './support.ts';

const WS = '/srv/agentyard/workspaces/exe_01jaaaaaaaaaaaaaaaaaaaaaaa';
const CONFIG = '/srv/agentyard/execution-files/exe_01jaaaaaaaaaaaaaaaaaaaaaaa';
const SPEC: BubblewrapSpec = {
  bwrap: '/usr/bin/bwrap',
  command: '/opt/tools/agent.mjs',
  args: ['--flag', 'value'],
  workspace: WS,
  configDir: CONFIG,
  readOnly: ['/opt/tools', '/opt/node'],
  hidden: ['/srv/agentyard', '/home/agentyard'],
  uid: 1000,
  gid: 1000,
  passwdFile: `${CONFIG}/passwd`,
  groupFile: `${CONFIG}/group`,
  system: [
    { path: '/usr', kind: 'dir' },
    { path: '/bin', kind: 'symlink', target: 'usr/bin' },
  ],
};

/** The (source, destination) pairs of an option taking two paths. */
function pairs(args: string[], option: string): [string, string][] {
  const out: [string, string][] = [];
  args.forEach((a, i) => {
    if (a === option) out.push([args[i + 1]!, args[i + 2]!]);
  });
  return out;
}

describe('bubblewrap command line', () => {
  it('binds the workspace as the only writable place, the system and tools read-only, in fresh namespaces', () => {
    const args = bubblewrapArgs(SPEC);
    expect(pairs(args, '--bind')).toEqual([[WS, WS]]);
    expect(pairs(args, '--ro-bind')).toEqual(
      expect.arrayContaining([
        ['/usr', '/usr'],
        ['/opt/tools', '/opt/tools'],
        ['/opt/node', '/opt/node'],
        [`${CONFIG}/passwd`, '/etc/passwd'],
        // the server's files for the execution: read-only, outside the workspace
        [CONFIG, CONFIG],
      ]),
    );
    expect(pairs(args, '--symlink')).toEqual([
      ['usr/bin', '/bin'],
      ['/tmp', '/var/tmp'],
    ]);
    for (const flag of [
      '--unshare-user',
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-uts',
      '--die-with-parent',
      '--new-session',
    ])
      expect(args).toContain(flag);
    expect(args).not.toContain('--unshare-net');
    expect(args.slice(args.indexOf('--uid'), args.indexOf('--uid') + 4)).toEqual(['--uid', '1000', '--gid', '1000']);
    expect(args.slice(args.indexOf('--proc'), args.indexOf('--proc') + 2)).toEqual(['--proc', '/proc']);
    expect(args).toContain('/tmp');
    // nothing of the data directory or the home is mounted, and neither is covered by a tool bind here
    expect(args.filter((a) => a.startsWith('/srv/agentyard') && !a.startsWith(WS) && !a.startsWith(CONFIG))).toEqual(
      [],
    );
    expect(args).not.toContain('/home/agentyard');
    // the root is read-only once the mount points exist; the command comes last, after `--`
    expect(args.lastIndexOf('--remount-ro')).toBeGreaterThan(args.lastIndexOf('--bind'));
    expect(args[args.lastIndexOf('--remount-ro') + 1]).toBe('/');
    expect(args.slice(args.indexOf('--'))).toEqual(['--', '/opt/tools/agent.mjs', '--flag', 'value']);
    expect(args.slice(args.indexOf('--chdir'), args.indexOf('--chdir') + 2)).toEqual(['--chdir', WS]);
  });

  it('sizes /tmp, /dev/shm and /run, keeps /dev read-only, refuses user namespaces, wraps the command', () => {
    const args = bubblewrapArgs({
      ...SPEC,
      tmpBytes: 256 * 1024 * 1024,
      disableUserns: true,
      wrapper: ['/usr/bin/prlimit', '--nproc=256', '--fsize=1024', '--'],
    });
    const sized = args.flatMap((a, i) => (a === '--size' ? [[args[i + 1], args[i + 2], args[i + 3]]] : []));
    expect(sized).toEqual([
      [String(256 * 1024 * 1024), '--tmpfs', '/dev/shm'],
      [String(256 * 1024 * 1024), '--tmpfs', '/tmp'],
      [String(1024 * 1024), '--tmpfs', '/run'],
    ]);
    expect(pairs(args, '--symlink')).toContainEqual(['/tmp', '/var/tmp']);
    expect(args.slice(args.indexOf('/dev/shm') + 1, args.indexOf('/dev/shm') + 3)).toEqual(['--remount-ro', '/dev']);
    expect(args.indexOf('--disable-userns')).toBeGreaterThan(args.indexOf('--unshare-user'));
    expect(args.slice(args.indexOf('--'))).toEqual([
      '--',
      '/usr/bin/prlimit',
      '--nproc=256',
      '--fsize=1024',
      '--',
      '/opt/tools/agent.mjs',
      '--flag',
      'value',
    ]);
    // an older bubblewrap: unsized, and no --disable-userns
    const old = bubblewrapArgs(SPEC);
    expect(old).not.toContain('--size');
    expect(old).not.toContain('--disable-userns');
  });

  it('makes the workspace a tmpfs of its limit, filled from the host workspace bound read-only, with its wrapper', () => {
    const args = bubblewrapArgs({ ...SPEC, workspaceBytes: 8 * 1024 * 1024 });
    // the host's workspace is never writable inside: only read, at the seed path, for the copy in
    expect(pairs(args, '--bind')).toEqual([]);
    expect(pairs(args, '--ro-bind')).toContainEqual([WS, SANDBOX_SEED_DIR]);
    const sized = args.indexOf(WS, args.indexOf(SANDBOX_SEED_DIR));
    expect(args.slice(sized - 3, sized + 1)).toEqual(['--size', String(8 * 1024 * 1024), '--tmpfs', WS]);
    // after the seed's bind: the tmpfs must not hide it; before the root turns read-only
    expect(args.indexOf('--remount-ro', sized)).toBeGreaterThan(sized);
    // the wrapper copies in, runs the command (which does not inherit fd 3), and copies out
    const command = args.indexOf('/opt/tools/agent.mjs');
    expect(args.slice(command - 6, command)).toEqual(workspaceWrapperArgs(WS));
    expect(args[command - 4]).toContain('"$@" 3>&-');
  });

  it('hides the data directory and the home under an empty tmpfs when a tool bind would show them', () => {
    const args = bubblewrapArgs({ ...SPEC, readOnly: ['/srv', '/home'] });
    const tmpfs = args.flatMap((a, i) => (a === '--tmpfs' ? [args[i + 1]!] : []));
    expect(tmpfs).toEqual(expect.arrayContaining(['/srv/agentyard', '/home/agentyard']));
    // hidden after the binds that would show them, before the workspace is bound back in
    const hide = args.indexOf('/srv/agentyard');
    expect(hide).toBeGreaterThan(args.indexOf('/srv'));
    expect(hide).toBeLessThan(args.indexOf('--bind'));
  });

  it('names the sandbox user with its home in the workspace', () => {
    const { passwd, group } = identityFiles(1000, 1000, `${WS}/.agentyard/home`);
    expect(passwd).toContain(`agent:x:1000:1000:Agentyard agent:${WS}/.agentyard/home:/bin/sh`);
    expect(group).toContain('agent:x:1000:');
  });

  it('reads bubblewrap exits of 128+N as the signal N', () => {
    expect(launcherExit(137, null)).toEqual({ code: null, signal: 'SIGKILL' });
    expect(launcherExit(143, null)).toEqual({ code: null, signal: 'SIGTERM' });
    expect(launcherExit(3, null)).toEqual({ code: 3, signal: null });
    expect(launcherExit(250, null)).toEqual({ code: 250, signal: null });
  });

  it('says why when user namespaces are not available (probed in a user namespace whose limit is 0)', () => {
    const module = path.resolve(import.meta.dirname, '../../src/execution/sandbox/bubblewrap.ts');
    const script = `import { probeBubblewrap } from ${JSON.stringify(module)};
      console.log(JSON.stringify(await probeBubblewrap('/usr/bin/bwrap', 1000, 1000)));`;
    // the limit is per user namespace: the host's own is untouched
    const out = execFileSync(
      'unshare',
      [
        '--user',
        '--map-root-user',
        'sh',
        '-c',
        'echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" --input-type=module -e "$1"',
        process.execPath,
        script,
      ],
      { encoding: 'utf8' },
    );
    expect(JSON.parse(out)).toEqual({
      ok: false,
      reason: expect.stringMatching(
        /^bubblewrap cannot create its namespaces here \(bwrap: Creating new namespace failed/,
      ),
    });
  });

  it('probes: a missing bubblewrap, and the one installed here', async () => {
    expect(await probeBubblewrap('/nonexistent/bwrap', 1000, 1000)).toEqual({
      ok: false,
      reason: 'bubblewrap not found at /nonexistent/bwrap',
    });
    expect(await probeBubblewrap('/usr/bin/bwrap', 1000, 1000)).toEqual({ ok: true });
  });
});

describe('resolving a command for the sandbox', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('binds the script directory, and for `#!/usr/bin/env node` the node found on PATH and its prefix', async () => {
    const PATH = process.env.PATH ?? '';
    const resolved = await resolveCommand(FAKE.claude, PATH, '/');
    const node = (await findOnPath('node', PATH, '/'))!;
    const realNode = realpathSync(node);
    expect(resolved!.executable).toBe(realpathSync(FAKE.claude));
    expect(resolved!.readOnly).toContain(realpathSync(AGENTS));
    if (!realNode.startsWith('/usr/')) {
      expect(resolved!.readOnly).toContain(path.dirname(node));
      expect(resolved!.readOnly).toContain(path.dirname(path.dirname(realNode)));
    }
    // the system directories are bound anyway
    expect(resolved!.readOnly.filter((d) => d === '/usr' || d.startsWith('/usr/'))).toEqual([]);
  });

  it('binds the outermost node_modules of a CLI inside a package tree; finds bare names on PATH', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'agentyard-resolve-'));
    dirs.push(root);
    const bin = path.join(root, 'node_modules', '@acme', 'cli', 'bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(path.join(bin, 'acme'), '#!/bin/sh\necho hi\n', { mode: 0o755 });
    const resolved = await resolveCommand('acme', `/nonexistent:${bin}`, '/');
    expect(resolved).toEqual({
      executable: path.join(realpathSync(root), 'node_modules/@acme/cli/bin/acme'),
      readOnly: [path.join(realpathSync(root), 'node_modules')],
    });
    expect(await resolveCommand('no-such-agent-cli', `/nonexistent:${bin}`, '/')).toBeUndefined();
  });
});

describe('container command line', () => {
  it('mounts the workspace at its path, passes the environment by name only, and drops privileges', () => {
    const args = containerArgs({
      runtime: 'docker',
      image: 'ghcr.io/acme/runner:1',
      name: 'agentyard-exe_1',
      command: 'claude',
      args: ['-p'],
      workspace: WS,
      configDir: CONFIG,
      envNames: ['ANTHROPIC_API_KEY', 'HOME'],
      uid: 10001,
      gid: 10001,
    });
    expect(args.slice(0, 2)).toEqual(['run', '--rm']);
    expect(args).toEqual(expect.arrayContaining(['--volume', `${WS}:${WS}:rw`, '--workdir', WS, '--read-only']));
    expect(args).toEqual(expect.arrayContaining(['--cap-drop', 'ALL', '--user', '10001:10001']));
    // a name alone: the value comes from the client's environment, never the command line
    expect(args.flatMap((a, i) => (a === '--env' ? [args[i + 1]] : []))).toEqual(['ANTHROPIC_API_KEY', 'HOME']);
    expect(args.join(' ')).not.toContain('=');
    expect(args.slice(args.indexOf('--'))).toEqual(['--', 'ghcr.io/acme/runner:1', 'claude', '-p']);
  });

  it('names the container after its execution; removing it never throws, client or engine missing', async () => {
    expect(containerName('exe_01JAAAAAAAAAAAAAAAAAAAAAAA')).toBe('agentyard-exe_01jaaaaaaaaaaaaaaaaaaaaaaa');
    await expect(removeContainer('/nonexistent/docker', 'exe_01jaaaaaaaaaaaaaaaaaaaaaaa')).resolves.toBeUndefined();
  });

  it('diagnoses a missing client and an unreachable engine', async () => {
    expect(await probeContainerRuntime('/nonexistent/docker')).toEqual({
      ok: false,
      reason: 'the container runtime client "/nonexistent/docker" is not installed',
    });
    let client = true;
    try {
      execFileSync('docker', ['--version'], { stdio: 'ignore' });
    } catch {
      client = false;
    }
    if (client) {
      const probe = await probeContainerRuntime('docker', {
        ...process.env,
        DOCKER_HOST: 'unix:///nonexistent/docker.sock',
      });
      expect(probe.ok).toBe(false);
      expect(probe.ok ? '' : probe.reason).toMatch(/^the container runtime docker is unreachable \(.+\)$/);
    }
  });
});

describe('sandbox settings', () => {
  it('is on by default with Debian bubblewrap; the variables are checked', () => {
    const s = sandboxSettings('/srv/agentyard', {});
    expect(s).toMatchObject({ enabled: true, require: false, bwrapPath: '/usr/bin/bwrap', uid: 1000, gid: 1000 });
    expect(s.hidden).toEqual(expect.arrayContaining(['/srv/agentyard', process.cwd()]));
    expect(sandboxSettings('/d', { AGENTYARD_REQUIRE_SANDBOX: '1', AGENTYARD_SANDBOX: 'none' })).toMatchObject({
      enabled: false,
      require: true,
    });
    expect(() => sandboxSettings('/d', { AGENTYARD_SANDBOX: 'maybe' })).toThrow(
      /AGENTYARD_SANDBOX must be auto or none/,
    );
    expect(() => sandboxSettings('/d', { AGENTYARD_CONTAINER_RUNTIME: 'lxc' })).toThrow(/AGENTYARD_CONTAINER_RUNTIME/);
    expect(() => sandboxSettings('/d', { AGENTYARD_SANDBOX_UID: '0' })).toThrow(/AGENTYARD_SANDBOX_UID/);
    expect(() => sandboxSettings('/d', { AGENTYARD_SANDBOX_READ_ONLY_PATHS: 'rel/path' })).toThrow(
      /not an absolute path/,
    );
  });
});
