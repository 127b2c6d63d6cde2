/**
 * Workspaces: one directory per execution, `<root>/<execution id>`, holding what the agent works on (the
 * attachments, the skill, the CLI's home directory). A follow-up that continues a run gets a fresh directory
 * that takes over the previous execution's files when they are still on this host. Finished workspaces are
 * kept for the retention period (for such follow-ups), then swept.
 *
 * Everything in a workspace is the agent's: the server writes and reads there only through workspace-fs.ts
 * (no link followed). The files the server writes for the sandbox itself (passwd, group, MCP configuration)
 * go to the execution's configuration directory outside the workspace, which the agent sees read-only.
 */
import { lstat, mkdir, readdir, readlink, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { descendantsOf } from './agent-process.ts';
import type { Assignment } from './assignment.ts';
import { makeDirectoryInside, writeFileInside } from './workspace-fs.ts';

export interface Workspace {
  /** The agent's working directory. */
  dir: string;
  /** HOME of the agent process (its CLI's own state: sessions, caches), inside the workspace. */
  home: string;
  /** Whether the previous execution's files were carried over. */
  carriedOver: boolean;
  /**
   * The server's files for this execution's sandbox and harness (passwd, group, MCP configuration): outside
   * the workspace, bound read-only into the sandbox. Made by createWorkspace; removed with removeConfigDir.
   */
  configDir: string;
}

const EXECUTION_DIR = /^exe_[0-9a-z]{26}$/;
const LEFTOVER = /^(exe_[0-9a-z]{26})\.(?:copy-out|replaced)$/;

/**
 * Makes an execution's workspace, carrying the previous execution's files over when they are here.
 * `configRoot`: where the execution's configuration directory goes (`<configRoot>/<execution id>`); without
 * one (a Kubernetes Job's scratch workspace, where no server shares the agent's disk) it is
 * `<workspace>/.agentyard/config`.
 */
export async function createWorkspace(
  root: string,
  executionId: string,
  previousExecutionId?: string,
  configRoot?: string,
): Promise<Workspace> {
  if (!EXECUTION_DIR.test(executionId)) throw new Error(`not an execution id: ${executionId}`);
  await mkdir(root, { recursive: true, mode: 0o700 });
  const dir = path.join(root, executionId);
  let carriedOver = false;
  if (previousExecutionId && EXECUTION_DIR.test(previousExecutionId)) {
    try {
      await rename(path.join(root, previousExecutionId), dir);
      carriedOver = true;
    } catch {
      // gone (swept, or it ran on another host): start empty
    }
  }
  if (!carriedOver) await mkdir(dir, { mode: 0o700 });
  // a carried-over workspace is the previous agent's: `.agentyard` may be a link by now
  const home = makeDirectoryInside(dir, '.agentyard/home');
  let configDir: string;
  if (configRoot) {
    await mkdir(configRoot, { recursive: true, mode: 0o700 });
    configDir = path.join(configRoot, executionId);
    await rm(configDir, { recursive: true, force: true });
    await mkdir(configDir, { mode: 0o700 });
  } else configDir = makeDirectoryInside(dir, '.agentyard/config');
  return { dir, home, carriedOver, configDir };
}

/** Removes an execution's configuration directory (when it is outside its workspace). */
export async function removeConfigDir(ws: Workspace): Promise<void> {
  if (ws.configDir.startsWith(ws.dir + path.sep)) return;
  await rm(ws.configDir, { recursive: true, force: true, maxRetries: 3 });
}

/**
 * Writes a file in the workspace (creating directories) without following a link on the way; secrets and
 * configuration files are 0600. Throws a WorkspacePathError naming a link it meets.
 */
export function writeWorkspaceFile(
  dir: string,
  relative: string,
  content: string | Buffer,
  mode = 0o600,
): Promise<string> {
  return writeFileInside(dir, relative, content, mode);
}

/** A safe file name for an attachment: its base name, no leading dot, no control characters. */
export function attachmentFileName(name: string): string {
  const base = path.basename(name.replaceAll('\\', '/')).replace(/[\x00-\x1f/]/g, '_');
  const safe = base.replace(/^\.+/, '_');
  return safe === '' || safe === '.' || safe === '..' ? 'attachment' : safe;
}

/**
 * Puts what the assignment brings into a workspace: its attachments (under safe file names) and the files of its
 * resolved skill under `.agents/skills/<name>/`. Answers the attachments' file names.
 */
export async function writeAssignmentFiles(
  dir: string,
  assignment: Pick<Assignment, 'attachments' | 'skill'>,
): Promise<string[]> {
  const names: string[] = [];
  for (const a of assignment.attachments) {
    const name = attachmentFileName(a.fileName);
    await writeWorkspaceFile(dir, name, Buffer.from(a.base64, 'base64'), 0o644);
    names.push(name);
  }
  if (assignment.skill?.resolved) {
    for (const f of assignment.skill.files)
      await writeWorkspaceFile(dir, path.join('.agents', 'skills', assignment.skill.name, f.path), f.content, 0o644);
  }
  return names;
}

/**
 * Disk used under `dir`: the blocks of its files (symlinks not followed; a sparse file counts what it holds),
 * stopping once past `limit` (and answering a number above it).
 */
export async function workspaceSize(dir: string, limit = Number.POSITIVE_INFINITY): Promise<number> {
  let total = 0;
  const stack = [dir];
  while (stack.length > 0 && total <= limit) {
    const current = stack.pop()!;
    let entries;
    try {
      entries = await readdir(current, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of entries) {
      const full = path.join(current, entry.name);
      if (entry.isDirectory()) stack.push(full);
      else if (entry.isFile()) {
        try {
          total += diskBytes(await lstat(full));
        } catch {
          // removed meanwhile
        }
      }
      if (total > limit) break;
    }
  }
  return total;
}

function diskBytes(info: { blocks: number; size: number }): number {
  return Number.isFinite(info.blocks) ? info.blocks * 512 : info.size;
}

/**
 * Disk held by files under `dir` that were deleted while a process of the agent's tree (below `pid`) still
 * has them open: they use the disk until closed, and a walk of the directory does not see them. Read from
 * /proc/<pid>/fd (Linux); nothing elsewhere.
 */
export async function deletedOpenBytes(dir: string, pid: number): Promise<number> {
  const seen = new Set<string>();
  let total = 0;
  for (const p of [pid, ...(await descendantsOf(pid))]) {
    let fds: string[];
    try {
      fds = await readdir(`/proc/${p}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const target = await readlink(`/proc/${p}/fd/${fd}`);
        if (!target.endsWith(' (deleted)') || !target.startsWith(dir + path.sep)) continue;
        const info = await stat(`/proc/${p}/fd/${fd}`);
        const key = `${info.dev}:${info.ino}`;
        if (seen.has(key) || info.nlink > 0) continue;
        seen.add(key);
        total += diskBytes(info);
      } catch {
        // closed meanwhile
      }
    }
  }
  return total;
}

/** The workspace's disk use while its agent (process `pid`) runs: its files and the deleted ones still open. */
export async function workspaceUsage(dir: string, limit: number, pid: number | undefined): Promise<number> {
  const open = pid === undefined ? 0 : await deletedOpenBytes(dir, pid);
  return open > limit ? open : open + (await workspaceSize(dir, limit - open));
}

export async function removeWorkspace(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true, maxRetries: 3 });
}

/**
 * Removes the workspaces under `root` that `keep` does not want (called with the execution id and the
 * directory's last modification time).
 */
export async function sweepWorkspaces(
  root: string,
  keep: (executionId: string, modifiedAt: Date) => boolean,
): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(root);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    // `<id>.copy-out` and `<id>.replaced`: a sandbox's copy-out the server was stopped in (sandbox-workspace.ts)
    const id = LEFTOVER.exec(name)?.[1] ?? name;
    if (!EXECUTION_DIR.test(id)) continue;
    const dir = path.join(root, name);
    try {
      const info = await stat(dir);
      if (keep(id, info.mtime)) continue;
      await removeWorkspace(dir);
      removed.push(name);
    } catch {
      // raced with another sweeper or a new execution
    }
  }
  return removed;
}
