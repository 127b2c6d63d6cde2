/**
 * Workspaces: one directory per execution, `<root>/<execution id>`, holding what the agent works on (the
 * attachments, the skill, the CLI's configuration and its home directory). A follow-up that continues a run
 * gets a fresh directory that takes over the previous execution's files when they are still on this host.
 * Finished workspaces are kept for the retention period (for such follow-ups), then swept.
 */
import { lstat, mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Assignment } from './assignment.ts';

export interface Workspace {
  /** The agent's working directory. */
  dir: string;
  /** HOME of the agent process (its CLI's own state: sessions, caches), inside the workspace. */
  home: string;
  /** Whether the previous execution's files were carried over. */
  carriedOver: boolean;
}

const EXECUTION_DIR = /^exe_[0-9a-z]{26}$/;

export async function createWorkspace(
  root: string,
  executionId: string,
  previousExecutionId?: string,
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
  const home = path.join(dir, '.agentyard', 'home');
  await mkdir(home, { recursive: true, mode: 0o700 });
  return { dir, home, carriedOver };
}

/** Resolves `relative` inside `dir`, refusing paths that leave it. */
export function insideWorkspace(dir: string, relative: string): string {
  const target = path.resolve(dir, relative);
  if (target !== dir && !target.startsWith(dir + path.sep)) throw new Error(`path leaves the workspace: ${relative}`);
  return target;
}

/** Writes a file in the workspace (creating directories); secrets and configuration files are 0600. */
export async function writeWorkspaceFile(
  dir: string,
  relative: string,
  content: string | Buffer,
  mode = 0o600,
): Promise<string> {
  const target = insideWorkspace(dir, relative);
  await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
  await writeFile(target, content, { mode });
  return target;
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
 * Bytes under `dir` (files only, symlinks not followed); stops counting once past `limit` and answers a
 * number above it.
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
          total += (await lstat(full)).size;
        } catch {
          // removed meanwhile
        }
      }
      if (total > limit) break;
    }
  }
  return total;
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
    if (!EXECUTION_DIR.test(name)) continue;
    const dir = path.join(root, name);
    try {
      const info = await stat(dir);
      if (keep(name, info.mtime)) continue;
      await removeWorkspace(dir);
      removed.push(name);
    } catch {
      // raced with another sweeper or a new execution
    }
  }
  return removed;
}
