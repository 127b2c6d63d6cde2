/**
 * The limits of an execution (issue 28, item 7), each met by a real agent in the real bubblewrap sandbox: it
 * forks 300 sleeps, writes 300 MiB to /tmp and /dev/shm, runs `unshare -Ur`, prints 20,000 events and 17 MiB
 * of output, and fills its workspace with files it deleted but keeps open (under its runner's
 * `x-agentyard-limits`, applied from a factory's runner file). The agents run under the `command` harness and
 * do what their prompt says in a shell (fixtures/agents/shell-agent.mjs).
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { effectiveLimits, runnerLimitsFrom, serverLimits } from '../../src/execution/limits.ts';
import { systemLayout } from '../../src/execution/sandbox/bubblewrap.ts';
import { PRLIMIT } from '../../src/execution/sandbox/process-limit.ts';
import { baseFiles } from '../support/factory-tree.ts';
import { FAKE, SHELL_AGENT, runShellScript, eventsOf, executionsOf, startExecServer, waitForState } from './support.ts';
import type { ExecServer } from './support.ts';

const MIB = 1024 * 1024;

describe('the limits of an execution in the bubblewrap sandbox', () => {
  let s: ExecServer;
  beforeAll(async () => {
    s = await startExecServer('pglite', {
      settings: { bins: { ...FAKE, command: SHELL_AGENT }, defaultHarness: 'command' },
    });
  });
  afterAll(async () => {
    await s?.close();
  });

  const shell = (script: string) => runShellScript(s, script);

  const read = (workspace: string, file: string): string => readFileSync(path.join(workspace, file), 'utf8').trim();

  it('runs at most 256 processes at once (300 sleeps forked)', async () => {
    // the loop counts each fork that succeeded itself: a child that had not run yet when the sandbox ended counts
    const { run, workspace, runId } = await shell(
      'i=0; while [ $i -lt 300 ]; do sleep 60 & i=$((i+1)); echo x >> started.txt; done',
    );
    const status = (await eventsOf(s, runId)).find((e) => e.type === 'status' && e.data.sandbox);
    const limits = status!.data.limits as string;
    const started = read(workspace, 'started.txt').split('\n').length;
    if (/^process limit not enforced/.test(limits)) {
      // a root server where no pids cgroup can be made (root is exempt from RLIMIT_NPROC): said, not hidden
      expect(limits).toMatch(/^process limit not enforced: the server runs as root, which RLIMIT_NPROC exempts, and /);
      expect(started).toBe(300);
      return;
    }
    expect(limits).toMatch(
      /^at most 256 processes \((pids cgroup|RLIMIT_NPROC)\); \/tmp 256 MiB; no user namespaces; network: /,
    );
    // dash gives up at the first fork it cannot make: the script fails, the agent reports it
    expect(run.status_message.message).toMatch(/^the command exited with code 2/);
    // the agent's own processes and threads (node, sh) count too
    expect(started).toBeLessThan(256);
    // a pids cgroup is the run's own; RLIMIT_NPROC counts every process of the sandbox's uid on the machine, so
    // sandboxes of other runs at the same moment (other test files) take their share of it
    expect(started).toBeGreaterThan(limits.includes('pids cgroup') ? 200 : 0);
  });

  it('has 256 MiB of /tmp and of /dev/shm (300 MiB written), and /var/tmp is /tmp', async () => {
    const { run, workspace } = await shell(
      [
        'head -c 300M /dev/zero > /tmp/big; echo $? > tmp-rc.txt; wc -c < /tmp/big > tmp-size.txt; rm -f /tmp/big',
        'head -c 300M /dev/zero > /dev/shm/big; wc -c < /dev/shm/big > shm-size.txt; rm -f /dev/shm/big',
        'echo hi > /var/tmp/x; cat /tmp/x > var-tmp.txt',
        'touch /dev/planted 2> dev-rc.txt; echo $? >> dev-rc.txt',
        'exit 0',
      ].join('\n'),
    );
    expect(run.state).toBe('SUCCEEDED');
    expect(read(workspace, 'tmp-rc.txt')).not.toBe('0');
    expect(Number(read(workspace, 'tmp-size.txt'))).toBe(256 * MIB);
    expect(Number(read(workspace, 'shm-size.txt'))).toBe(256 * MIB);
    expect(read(workspace, 'var-tmp.txt')).toBe('hi');
    // /dev itself is read-only (no unsized tmpfs to fill)
    expect(read(workspace, 'dev-rc.txt')).toMatch(/Read-only file system\n1$/);
  });

  it('cannot create user namespaces (unshare -Ur)', async () => {
    const { run, workspace } = await shell('unshare -Ur true 2> userns-err.txt; echo $? > userns-rc.txt; exit 0');
    expect(run.state).toBe('SUCCEEDED');
    expect(read(workspace, 'userns-rc.txt')).not.toBe('0');
    expect(read(workspace, 'userns-err.txt')).toContain('unshare failed');
  });

  it('ends FAILED past 10,000 events (20,000 printed), keeping the first ones', async () => {
    const { run, runId } = await shell(
      `i=0; while [ $i -lt 20000 ]; do echo '{"type":"message","text":"event '$i'"}'; i=$((i+1)); done`,
    );
    expect(run.state).toBe('FAILED');
    expect(run.status_message.message).toBe("the agent reported more than 10000 events (the execution's event limit)");
    expect(run.status_message).toMatchObject({ error_code: 'budget_exceeded', error_detail: 'event_limit_exceeded' });
    const events = await eventsOf(s, runId);
    const messages = events.filter((e) => e.type === 'message');
    expect(messages.length).toBeLessThan(10_000);
    expect(messages.length).toBeGreaterThan(9_000);
    expect(events.at(-2)!.data).toMatchObject({ error_code: 'event_limit_exceeded', fatal: true });
    expect(events.length).toBeLessThanOrEqual(10_010);
  });

  it('ends FAILED past 16 MiB of output (17 MiB in lines on stderr; an endless line on stdout)', async () => {
    for (const script of [
      "head -c 17M /dev/zero | tr '\\0' a | fold -w 4096 >&2; sleep 30",
      "head -c 17M /dev/zero | tr '\\0' a; sleep 30",
    ]) {
      const { run } = await shell(script);
      expect(run.state).toBe('FAILED');
      expect(run.status_message.message).toBe(
        "the agent printed more than 16 MiB of output (the execution's output limit)",
      );
      expect(run.status_message).toMatchObject({
        error_code: 'budget_exceeded',
        error_detail: 'output_limit_exceeded',
      });
    }
  });

  it("ends FAILED when deleted-but-open files fill the workspace past its runner's x-agentyard-limits", async () => {
    const created = await s.api('POST', '/factories', { name: 'limited', source: { type: 'managed' } });
    expect(created.status, created.text).toBe(201);
    const factoryId = created.body.id as string;
    const files = {
      ...baseFiles(),
      'runners/default.yaml':
        'platform:\n  os: linux\n  linux:\n    dockerImage: node:24-bookworm\nx-agentyard-limits:\n  workspaceMiB: 8\n  processes: 64\n',
    };
    const applied = await s.api('POST', `/factories/${factoryId}/apply`, {
      files: Object.entries(files).map(([p, content]) => ({ path: p, content })),
    });
    expect(applied.status, applied.text).toBe(200);
    expect(applied.body.result).toBe('applied');
    // two files of 6 MiB, each under the largest file the runner allows, deleted and kept open
    const script = [
      'exec 3> one.bin 4> two.bin',
      'rm one.bin two.bin',
      'head -c 6M /dev/zero >&3',
      'head -c 6M /dev/zero >&4',
      'sleep 30',
    ].join('\n');
    const res = await s.api('POST', `/factories/${factoryId}/runs`, { prompt: `<<SH\n${script}\nSH>>` });
    expect(res.status, res.text).toBe(200);
    const runId = res.body.run_id as string;
    const run = await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR'], 60_000);
    expect(run.state).toBe('FAILED');
    expect(run.status_message.message).toBe(
      "the workspace reached its limit of 8 MiB (the execution's workspace limit, a filesystem of that size; files deleted but still open count)",
    );
    expect(run.status_message.error_detail).toBe('workspace_too_large');
    const [execution] = await executionsOf(s, runId);
    expect(existsSync(path.join(execution!.workspace!, 'one.bin'))).toBe(false);
    const status = (await eventsOf(s, runId)).find((e) => e.type === 'status' && e.data.sandbox);
    expect(status!.data.limits).toMatch(/^at most 64 processes/);
  });
});

describe('RLIMIT_NPROC, the process limit where no cgroup can be made', () => {
  // bubblewrap as an unprivileged user (root is exempt from RLIMIT_NPROC: as root, the test drops to nobody)
  const asUser = process.getuid?.() === 0 ? ['setpriv', '--reuid', '65534', '--regid', '65534', '--clear-groups'] : [];
  const sandbox = async (script: string): Promise<string> => {
    const system = (await systemLayout()).flatMap((e) =>
      e.kind === 'dir' ? ['--ro-bind', e.path, e.path] : ['--symlink', e.target, e.path],
    );
    return new Promise((resolve, reject) => {
      const argv = [
        ...asUser,
        '/usr/bin/bwrap',
        ...['--unshare-user', '--uid', '1000', '--gid', '1000', '--unshare-pid', '--disable-userns'],
        ...system,
        ...['--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp'],
        '--die-with-parent',
        ...['--', PRLIMIT, '--nproc=20', '--', '/bin/sh', '-c', script],
      ];
      execFile(argv[0]!, argv.slice(1), { timeout: 30_000 }, (err, stdout) =>
        err && !stdout ? reject(err) : resolve(stdout.trim()),
      );
    });
  };

  // Other test files' sandboxes run at the same time, and their processes count in the kernel's per-user totals
  // as they come and go: a rare fork refused at an unlucky moment is retried rather than read as a limit.
  it('is counted per sandbox (each its own user namespace), though every agent is uid 1000', { retry: 2 }, async () => {
    // 15 sleeps in each of two sandboxes at once: 30 processes of uid 1000, 20 allowed per sandbox
    const script =
      'for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do sleep 3 & done; sleep 0.5; ls /proc | grep -c "^[0-9]"';
    const [one, two] = await Promise.all([sandbox(script), sandbox(script)]);
    expect(Number(one)).toBeGreaterThanOrEqual(17);
    expect(Number(two)).toBeGreaterThanOrEqual(17);
    // and it holds in each: 30 forks in one sandbox stop at 20
    // (counted with builtins only: at the limit, nothing more can be forked)
    const over = await sandbox(
      '(i=0; while [ $i -lt 30 ]; do (echo x >> /tmp/s; exec sleep 3) & i=$((i+1)); done) 2>/dev/null; n=0; while read l; do n=$((n+1)); done < /tmp/s; echo $n',
    );
    expect(Number(over)).toBeLessThan(20);
    expect(Number(over)).toBeGreaterThan(10);
  });
});

describe('limit settings', () => {
  it('takes the server defaults from the environment, checked', () => {
    expect(serverLimits({})).toEqual({
      processes: 256,
      tmpBytes: 256 * MIB,
      events: 10_000,
      outputBytes: 16 * MIB,
      allowNestedUserNamespaces: false,
    });
    expect(() => serverLimits({ AGENTYARD_EXECUTION_MAX_EVENTS: '1e400' })).toThrow(
      'AGENTYARD_EXECUTION_MAX_EVENTS must be a positive integer, got "1e400"',
    );
  });

  it("a runner's limits tighten the server's, never loosen them; user namespaces need both to allow them", () => {
    const server = serverLimits({ AGENTYARD_SANDBOX_ALLOW_NESTED_USERNS: '1' });
    const runner = runnerLimitsFrom({ processes: 10_000, tmpMiB: 32, events: 'many', nestedUserNamespaces: true });
    expect(runner).toEqual({ processes: 10_000, tmpMiB: 32, nestedUserNamespaces: true });
    expect(effectiveLimits(server, 100 * MIB, runner)).toEqual({
      processes: 256,
      tmpBytes: 32 * MIB,
      workspaceBytes: 100 * MIB,
      events: 10_000,
      outputBytes: 16 * MIB,
      nestedUserNamespaces: true,
    });
    expect(effectiveLimits(serverLimits({}), 100 * MIB, runner).nestedUserNamespaces).toBe(false);
    expect(runnerLimitsFrom(null)).toBeUndefined();
  });
});
