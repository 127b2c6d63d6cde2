/**
 * The workspace's disk limit as the kernel holds it (issue 28, item 7): in the bubblewrap sandbox the
 * workspace is a tmpfs of the limit, copied in at the start and back to the host at the end. Agents under the
 * `command` harness (fixtures/agents/shell-agent.mjs) write past the limit as fast as they can, or into a file
 * they deleted but keep open: each write stops at the limit (ENOSPC), the run ends FAILED naming it, and the
 * workspace as it was comes back. A normal run's files come back for its follow-up; a hostile workspace
 * (links to host files, odd names, a FIFO) comes back without a write outside the workspace; a cancelled run's
 * files come back, and an agent that kills the sandbox's wrapper leaves the workspace it started with.
 */
import {
  lstatSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workspaceSize } from '../../src/execution/workspace.ts';
import {
  FAKE,
  SHELL_AGENT,
  runShellScript,
  createRun,
  eventsOf,
  executionsOf,
  startExecServer,
  waitForState,
  whenRunsTold,
} from './support.ts';
import type { ExecServer } from './support.ts';

const MIB = 1024 * 1024;
const LIMIT = 8 * MIB;
const FULL_MESSAGE =
  "the workspace reached its limit of 8 MiB (the execution's workspace limit, a filesystem of that size; files deleted but still open count)";

describe('the workspace limit, held by the kernel in the bubblewrap sandbox', () => {
  let s: ExecServer;
  let host: string;
  beforeAll(async () => {
    s = await startExecServer('pglite', {
      settings: { bins: { ...FAKE, command: SHELL_AGENT }, defaultHarness: 'command', workspaceMaxBytes: LIMIT },
    });
    host = mkdtempSync(path.join(tmpdir(), 'agentyard-host-'));
  });
  afterAll(async () => {
    await s?.close();
    if (host) rmSync(host, { recursive: true, force: true });
  });

  const shell = (script: string, extra: Record<string, unknown> = {}) => runShellScript(s, script, extra);

  const read = (workspace: string, file: string): string => readFileSync(path.join(workspace, file), 'utf8').trim();

  it('stops writers at the limit (dd and head at full speed): ENOSPC, FAILED, the workspace kept', async () => {
    for (const writer of [
      'dd if=/dev/zero of=big.bin bs=1M count=1000 2> writer-err.txt',
      'head -c 1000M /dev/zero > big.bin 2> writer-err.txt',
    ]) {
      const { run, workspace, runId } = await shell(
        `echo kept > before.txt\n${writer}\necho $? > writer-rc.txt\nexit 0`,
      );
      expect(run.state).toBe('FAILED');
      expect(run.status_message.message).toBe(FULL_MESSAGE);
      expect(run.status_message.error_detail).toBe('workspace_too_large');
      // what the agent wrote up to the limit is on the host, and no more than the limit
      expect(read(workspace, 'before.txt')).toBe('kept');
      expect(statSync(path.join(workspace, 'big.bin')).size).toBeLessThanOrEqual(LIMIT);
      expect(statSync(path.join(workspace, 'big.bin')).size).toBeGreaterThan(LIMIT - MIB);
      expect(await workspaceSize(workspace)).toBeLessThanOrEqual(LIMIT);
      const status = (await eventsOf(s, runId)).find((e) => e.type === 'status' && e.data.sandbox);
      expect(status!.data.limits).toContain('workspace 8 MiB (a filesystem of that size)');
    }
  });

  it('stops an agent holding a deleted-but-open file at the limit: FAILED, its other files kept', async () => {
    const { run, workspace } = await shell(
      [
        'echo kept > before.txt',
        'exec 3> held.bin',
        'rm held.bin',
        'head -c 1000M /dev/zero >&3 2> /dev/null',
        // holds it, running, as long as it may
        'sleep 60',
      ].join('\n'),
    );
    expect(run.state).toBe('FAILED');
    expect(run.status_message.message).toBe(FULL_MESSAGE);
    expect(read(workspace, 'before.txt')).toBe('kept');
    expect(readdirSync(workspace).sort()).toEqual(['.agentyard', 'before.txt']);
  });

  it('fails a run whose background process filled the workspace with a deleted file as the agent ended', async () => {
    const { run } = await shell(
      [
        '(exec 3> held.bin; rm held.bin; head -c 1000M /dev/zero >&3 2> /dev/null; sleep 60) &',
        // waits for the workspace to be full, then ends "successfully"
        'while [ "$(stat -f -c %a .)" -gt 0 ]; do sleep 0.05; done',
        'exit 0',
      ].join('\n'),
    );
    expect(run.state).toBe('FAILED');
    expect(run.status_message.message).toBe(FULL_MESSAGE);
  });

  it("brings a normal run's files back, for its follow-up to find", async () => {
    const script = [
      'mkdir -p sub/deep; echo one > made.txt; echo deep > sub/deep/file.txt; ln -s made.txt link',
      'printf "#!/bin/sh\\n" > tool.sh; chmod 755 tool.sh; ln made.txt hard.txt',
    ].join('\n');
    const { run, workspace, runId } = await shell(script);
    expect(run.state).toBe('SUCCEEDED');
    expect(read(workspace, 'made.txt')).toBe('one');
    expect(readlinkSync(path.join(workspace, 'link'))).toBe('made.txt');
    expect(statSync(path.join(workspace, 'tool.sh')).mode & 0o111).not.toBe(0);
    // a hard link stays one
    expect(statSync(path.join(workspace, 'hard.txt')).ino).toBe(statSync(path.join(workspace, 'made.txt')).ino);

    const before = (await executionsOf(s, runId)).length;
    // the follow-up's prompt is its message: the script that reads what the first execution left
    const next =
      '<<SH\n{ cat made.txt; cat sub/deep/file.txt; readlink link; [ -x tool.sh ] && echo executable; } > seen.txt\nSH>>';
    expect((await s.api('POST', `/agent/runs/${runId}/followups`, { message: next })).status).toBe(200);
    await whenRunsTold(s, 'the follow-up to end', async () => {
      const executions = await executionsOf(s, runId);
      return executions.length > before && executions.at(-1)!.ended_at !== null;
    });
    const after = (await executionsOf(s, runId)).at(-1)!;
    expect(read(after.workspace!, 'seen.txt').split('\n')).toEqual(['one', 'deep', 'made.txt', 'executable']);
  });

  it('copies a hostile workspace back without a write outside it', async () => {
    const target = path.join(host, 'host-file');
    writeFileSync(target, 'ORIGINAL\n');
    const { run, workspace, runId } = await shell(
      [
        `ln -s ${target} host-link`,
        `ln -s ${host} host-dir`,
        'ln -s / root',
        'ln -s ../../.. up',
        'mkfifo fifo',
        'echo x > ..hidden; echo y > "...";  echo z > "$(printf "new\\nline")"',
        'ln -s /dev/sda sda',
        'mkdir -p dir && ln -s /etc dir/etc',
      ].join('\n'),
    );
    expect(run.state, JSON.stringify(run.status_message)).toBe('SUCCEEDED');
    expect(readFileSync(target, 'utf8')).toBe('ORIGINAL\n');
    expect(readdirSync(host)).toEqual(['host-file']);
    // links come back as links, never followed
    expect(readlinkSync(path.join(workspace, 'host-link'))).toBe(target);
    expect(readlinkSync(path.join(workspace, 'host-dir'))).toBe(host);
    expect(readlinkSync(path.join(workspace, 'root'))).toBe('/');
    expect(readlinkSync(path.join(workspace, 'up'))).toBe('../../..');
    expect(readlinkSync(path.join(workspace, 'sda'))).toBe('/dev/sda');
    expect(readlinkSync(path.join(workspace, 'dir', 'etc'))).toBe('/etc');
    expect(read(workspace, '..hidden')).toBe('x');
    expect(read(workspace, '...')).toBe('y');
    expect(read(workspace, 'new\nline')).toBe('z');
    // the FIFO is left out, and the run says so
    expect(() => lstatSync(path.join(workspace, 'fifo'))).toThrow(/ENOENT/);
    const leftOut = (await eventsOf(s, runId)).find((e) => e.data.error_code === 'workspace_entries_left_out');
    expect(leftOut!.data.message).toContain('fifo (a FIFO)');
  });

  it("keeps a cancelled run's files", async () => {
    const runId = await createRun(s, {
      prompt: `<<SH\necho before-cancel > progress.txt\necho '{"type":"message","text":"written"}'\nsleep 60\nSH>>`,
    });
    await whenRunsTold(s, 'the file to be written', async () =>
      (await eventsOf(s, runId)).some((e) => e.type === 'message' && e.data.text === 'written') ? true : undefined,
    );
    const [execution] = await executionsOf(s, runId);
    // until the copy-out, the file is only in the sandbox's own workspace
    expect(() => lstatSync(path.join(execution!.workspace!, 'progress.txt'))).toThrow(/ENOENT/);
    expect((await s.api('POST', `/agent/runs/${runId}/cancel`)).status).toBe(200);
    await waitForState(s, runId, ['CANCELLED'], 30_000);
    const ended = await whenRunsTold(s, 'the execution to end', async () => {
      const [e] = await executionsOf(s, runId);
      return e!.ended_at !== null ? e : undefined;
    });
    expect(ended!.outcome).toBe('cancelled');
    expect(read(execution!.workspace!, 'progress.txt')).toBe('before-cancel');
  });

  it('reads an artifact the agent reports while it runs from its own workspace, in the sandbox', async () => {
    const runId = await createRun(s, {
      prompt: `<<SH\necho made-inside > report.txt\necho '{"type":"artifact","artifact_type":"FILE","data":{"filepath":"report.txt"}}'\nsleep 60\nSH>>`,
    });
    const files = await whenRunsTold(s, 'the artifact to be stored', async () => {
      const res = await s.server.ctx.db.query<{ data: Uint8Array }>(
        'SELECT data FROM run_artifact_files WHERE run_id = $1',
        [runId],
      );
      return res.rows.length ? res.rows : undefined;
    });
    expect(files.map((r) => Buffer.from(r.data).toString())).toEqual(['made-inside\n']);
    // while the agent runs, the host's workspace does not have it yet
    const [execution] = await executionsOf(s, runId);
    expect(() => lstatSync(path.join(execution!.workspace!, 'report.txt'))).toThrow(/ENOENT/);
    await s.api('POST', `/agent/runs/${runId}/cancel`);
  });

  it('keeps the files of a run stopped at its deadline', async () => {
    const { run, workspace } = await shell('echo before-deadline > progress.txt\nsleep 60', {
      config: { max_duration_seconds: 2 },
    });
    expect(run.state).toBe('FAILED');
    expect(run.status_message.error_code).toBe('budget_exceeded');
    expect(read(workspace, 'progress.txt')).toBe('before-deadline');
  });

  it('an agent that kills the wrapper loses its own changes; the workspace keeps what it started with', async () => {
    const { run, workspace, runId } = await shell('echo lost > new.txt\nkill -9 2\nsleep 60', {
      attachments: [{ file_name: 'given.txt', mime_type: 'text/plain', data: Buffer.from('GIVEN').toString('base64') }],
    });
    expect(run.state).not.toBe('SUCCEEDED');
    expect(read(workspace, 'given.txt')).toBe('GIVEN');
    expect(() => lstatSync(path.join(workspace, 'new.txt'))).toThrow(/ENOENT/);
    const lost = (await eventsOf(s, runId)).find((e) => e.data.error_code === 'workspace_not_copied');
    expect(lost!.data.message).toBe(
      'the sandbox ended before its workspace could be copied back; the workspace keeps what it held when the agent started',
    );
  });
});
