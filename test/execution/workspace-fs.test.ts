/**
 * The server's reads and writes in a workspace follow no link: not at the end of a path, not in its middle,
 * not through a hard link's shared inode, not into a FIFO; and the harness adapters (Claude Code's session copy,
 * the skill files) use them. Real files on disk, no sandbox needed.
 */
import { execFileSync } from 'node:child_process';
import {
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Assignment } from '../../src/execution/assignment.ts';
import { claudeHarness } from '../../src/execution/harnesses/claude.ts';
import { createWorkspace, writeAssignmentFiles } from '../../src/execution/workspace.ts';
import {
  listInside,
  makeDirectoryInside,
  readFileInside,
  WorkspacePathError,
  writeFileInside,
} from '../../src/execution/workspace-fs.ts';

const LINK = 'is a symbolic link (the server follows no link in a workspace)';

describe('workspace files', () => {
  let root: string;
  let ws: string;
  let host: string;
  beforeEach(() => {
    root = mkdtempSync(path.join(tmpdir(), 'agentyard-wsfs-'));
    ws = path.join(root, 'ws');
    host = path.join(root, 'host');
    mkdirSync(ws);
    mkdirSync(host);
    writeFileSync(path.join(host, 'target'), 'HOST\n');
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const refusal = (fn: () => unknown): string => {
    try {
      fn();
    } catch (err) {
      expect(err).toBeInstanceOf(WorkspacePathError);
      return (err as Error).message;
    }
    throw new Error('not refused');
  };
  const asyncRefusal = async (p: Promise<unknown>): Promise<string> => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WorkspacePathError);
    return (err as Error).message;
  };

  it('writes files and directories, replacing a file by rename (a hard link keeps its old content)', async () => {
    await writeFileInside(ws, 'a/b/c.txt', 'one');
    expect(readFileSync(path.join(ws, 'a/b/c.txt'), 'utf8')).toBe('one');
    linkSync(path.join(ws, 'a/b/c.txt'), path.join(ws, 'hard.txt'));
    await writeFileInside(ws, 'a/b/c.txt', 'two');
    expect(readFileSync(path.join(ws, 'a/b/c.txt'), 'utf8')).toBe('two');
    expect(readFileSync(path.join(ws, 'hard.txt'), 'utf8')).toBe('one');
    expect(readFileInside(ws, 'a/b/c.txt').toString()).toBe('two');
    expect(readdirSync(path.join(ws, 'a/b'))).toEqual(['c.txt']);
  });

  it('refuses a link at the end of the path or in its middle, for writes, reads, listings and directories', async () => {
    symlinkSync(path.join(host, 'target'), path.join(ws, 'file'));
    symlinkSync(host, path.join(ws, 'dir'));
    expect(await asyncRefusal(writeFileInside(ws, 'file', 'x'))).toBe(`file ${LINK}`);
    expect(await asyncRefusal(writeFileInside(ws, 'dir/target', 'x'))).toBe(`dir ${LINK}`);
    expect(await asyncRefusal(writeFileInside(ws, 'dir/new/deeper.txt', 'x'))).toBe(`dir ${LINK}`);
    expect(refusal(() => readFileInside(ws, 'file'))).toBe(`file ${LINK}`);
    expect(refusal(() => readFileInside(ws, 'dir/target'))).toBe(`dir ${LINK}`);
    expect(refusal(() => listInside(ws, 'dir'))).toBe(`dir ${LINK}`);
    expect(refusal(() => makeDirectoryInside(ws, 'dir/sub'))).toBe(`dir ${LINK}`);
    // nothing of the host changed
    expect(readFileSync(path.join(host, 'target'), 'utf8')).toBe('HOST\n');
    expect(readdirSync(host)).toEqual(['target']);
  });

  it('refuses paths that leave the workspace, special files, and files over the limit', async () => {
    expect(await asyncRefusal(writeFileInside(ws, '../host/target', 'x'))).toBe('../host/target leaves the workspace');
    expect(refusal(() => readFileInside(ws, '/etc/passwd'))).toBe('/etc/passwd leaves the workspace');
    execFileSync('mkfifo', [path.join(ws, 'fifo')]);
    // opened without blocking, then refused: a FIFO never stalls the server
    expect(refusal(() => readFileInside(ws, 'fifo'))).toBe('fifo is not a regular file');
    writeFileSync(path.join(ws, 'big'), Buffer.alloc(2048));
    expect(refusal(() => readFileInside(ws, 'big', 1024))).toBe('big is over 1024 bytes');
  });

  it('a carried-over workspace whose .agentyard is a link is refused before anything is made through it', async () => {
    const workspaces = path.join(root, 'workspaces');
    const first = await createWorkspace(
      workspaces,
      'exe_01aaaaaaaaaaaaaaaaaaaaaaaa',
      undefined,
      path.join(root, 'cfg'),
    );
    expect(lstatSync(first.configDir).isDirectory()).toBe(true);
    expect(first.configDir.startsWith(first.dir)).toBe(false);
    rmSync(path.join(first.dir, '.agentyard'), { recursive: true });
    symlinkSync(host, path.join(first.dir, '.agentyard'));
    const err = await createWorkspace(
      workspaces,
      'exe_01bbbbbbbbbbbbbbbbbbbbbbbb',
      'exe_01aaaaaaaaaaaaaaaaaaaaaaaa',
      path.join(root, 'cfg'),
    ).catch((e: unknown) => e);
    expect((err as Error).message).toBe(`.agentyard ${LINK}`);
    expect(readdirSync(host)).toEqual(['target']);
  });

  it('skill files are not written through a linked skills directory', async () => {
    mkdirSync(path.join(ws, '.agents'));
    symlinkSync(host, path.join(ws, '.agents', 'skills'));
    const err = await writeAssignmentFiles(ws, {
      attachments: [],
      skill: {
        spec: 'r:fix',
        name: 'fix',
        resolved: true,
        source: 'factory f',
        files: [{ path: 'SKILL.md', content: 'x' }],
      },
    }).catch((e: unknown) => e);
    expect((err as Error).message).toBe(`.agents/skills ${LINK}`);
    expect(readdirSync(host)).toEqual(['target']);
  });

  it("Claude Code's session copy reads no host file through a link", async () => {
    const workspaces = path.join(root, 'workspaces');
    const ws2 = await createWorkspace(workspaces, 'exe_01cccccccccccccccccccccccc', undefined, path.join(root, 'cfg'));
    const projects = path.join(ws2.home, '.claude', 'projects', 'elsewhere');
    mkdirSync(projects, { recursive: true });
    symlinkSync(path.join(host, 'target'), path.join(projects, 'sess-1.jsonl'));
    const assignment = {
      mcpServers: {},
      skill: undefined,
      modelId: undefined,
      basePrompt: undefined,
      resumeSessionId: 'sess-1',
      run: { config: {} },
      secretEnv: {},
    } as unknown as Assignment;
    const err = await claudeHarness
      .prepare({ assignment, workspace: ws2, bin: 'claude', extraArgs: [], prompt: 'go on' })
      .catch((e: unknown) => e);
    expect((err as Error).message).toBe(`.claude/projects/elsewhere/sess-1.jsonl ${LINK}`);
    // nothing of the host file reached the workspace
    const copied = path.join(ws2.home, '.claude', 'projects');
    expect(readdirSync(copied)).toEqual(['elsewhere']);
  });
});
