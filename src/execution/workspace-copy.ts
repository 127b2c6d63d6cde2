/**
 * Copies a workspace the agent wrote in its sandbox (its size-limited tmpfs, read through
 * `/proc/<pid>/root`) back to the host. Everything there is the agent's, so hostile: the tree is walked one
 * directory at a time, each opened with O_DIRECTORY | O_NOFOLLOW and its entries named relative to the open
 * directory (`/proc/self/fd/<fd>/<name>`), so no link is followed. Names come from readdir (never `/`, `.` or
 * `..`), files are created in a fresh directory of the server's with O_CREAT | O_EXCL | O_NOFOLLOW, symbolic
 * links are recreated as links (their targets never read), FIFOs, sockets and devices are left out, and what
 * is written is bounded: past `budget` bytes nothing more is copied. Hard links within the tree stay links.
 */
import {
  closeSync,
  constants,
  fstatSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readlinkSync,
  symlinkSync,
} from 'node:fs';
import type { Stats } from 'node:fs';
import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_DIRECTORY, O_NONBLOCK } = constants;
const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;
const CHUNK = 1024 * 1024;
/** Runs of zeros this long are left as holes. */
const HOLE = 64 * 1024;
const ZERO = Buffer.alloc(HOLE);
/** What an entry costs the budget besides its bytes (a directory takes a block on the host's disk). */
const DIR_COST = 4096;
const ENTRY_COST = 256;

export interface CopyResult {
  /** Bytes of file contents counted against the budget (rounded up to 4 KiB). */
  bytes: number;
  files: number;
  /** Entries not copied (special files, those past the budget, unreadable ones), the first 20 named. */
  leftOut: { count: number; examples: string[] };
  /** The budget ran out: some files were left out. */
  overBudget: boolean;
}

interface Walk {
  /** Bytes of file contents (rounded up to pages, as the tmpfs counts them). */
  budget: number;
  /** What the entries themselves may cost the host (inodes, directory blocks). */
  entryBudget: number;
  entryBytes: number;
  result: CopyResult;
  /** Source files with several links, by `dev:ino`: where their first copy went. */
  linked: Map<string, string>;
}

function leaveOut(walk: Walk, shown: string, why: string): void {
  walk.result.leftOut.count += 1;
  if (walk.result.leftOut.examples.length < 20) walk.result.leftOut.examples.push(`${shown} (${why})`);
}

/** Counts an entry and its contents against the budgets; false (nothing counted) when one would be passed. */
function charge(walk: Walk, entry: number, content = 0): boolean {
  if (walk.result.bytes + content > walk.budget || walk.entryBytes + entry > walk.entryBudget) {
    walk.result.overBudget = true;
    return false;
  }
  walk.result.bytes += content;
  walk.entryBytes += entry;
  return true;
}

const roundUp = (n: number): number => Math.ceil(n / 4096) * 4096;

/**
 * Copies the directory `source` (its contents) into `dest`, a new, empty directory of the server's: file
 * contents up to `budget` bytes (what a tmpfs of that size can hold), and entries up to a sixteenth of it
 * more (256 bytes each, 4 KiB a directory). Answers what was copied and left out. Throws only when `source`
 * itself cannot be opened as a directory.
 */
export async function copyTreeOut(source: string, dest: string, budget: number): Promise<CopyResult> {
  const walk: Walk = {
    entryBudget: Math.floor(budget / 16),
    entryBytes: 0,
    budget,
    result: { bytes: 0, files: 0, leftOut: { count: 0, examples: [] }, overBudget: false },
    linked: new Map(),
  };
  const fd = openSync(source, DIR_FLAGS);
  try {
    await copyDirectory(walk, fd, dest, '');
  } finally {
    closeSync(fd);
  }
  return walk.result;
}

async function copyDirectory(walk: Walk, dirFd: number, dest: string, shown: string): Promise<void> {
  const base = `/proc/self/fd/${dirFd}`;
  let names: string[];
  try {
    names = readdirSync(base);
  } catch (err) {
    leaveOut(walk, shown || '.', (err as NodeJS.ErrnoException).code ?? 'unreadable');
    return;
  }
  for (const name of names.sort()) {
    const rel = shown ? `${shown}/${name}` : name;
    // readdir never answers these, but the names are the agent's: nothing that could leave `dest` is used
    if (name === '.' || name === '..' || name.includes('/') || name.includes('\0')) {
      leaveOut(walk, rel, 'invalid name');
      continue;
    }
    let info: Stats;
    try {
      info = lstatSync(`${base}/${name}`);
    } catch {
      continue; // gone meanwhile
    }
    try {
      await copyEntry(walk, `${base}/${name}`, path.join(dest, name), rel, info);
    } catch (err) {
      // made in the server's own new directory: a name met twice, or the host's disk refusing
      leaveOut(walk, rel, (err as NodeJS.ErrnoException).code ?? (err as Error).message);
    }
  }
}

async function copyEntry(walk: Walk, from: string, target: string, rel: string, info: Stats): Promise<void> {
  if (info.isDirectory()) {
    if (!charge(walk, DIR_COST)) return leaveOut(walk, rel, 'over the workspace limit');
    let child: number;
    try {
      child = openSync(from, DIR_FLAGS);
    } catch (err) {
      return leaveOut(walk, rel, (err as NodeJS.ErrnoException).code ?? 'unreadable');
    }
    try {
      mkdirSync(target, { mode: (info.mode & 0o777) | 0o700 });
      await copyDirectory(walk, child, target, rel);
    } finally {
      closeSync(child);
    }
  } else if (info.isSymbolicLink()) {
    const link = readlinkSync(from);
    if (!charge(walk, ENTRY_COST + Buffer.byteLength(link))) return leaveOut(walk, rel, 'over the workspace limit');
    symlinkSync(link, target);
  } else if (info.isFile()) {
    await copyFile(walk, from, target, rel, info);
  } else {
    leaveOut(walk, rel, info.isFIFO() ? 'a FIFO' : info.isSocket() ? 'a socket' : 'a device');
  }
}

async function copyFile(walk: Walk, from: string, to: string, rel: string, info: Stats): Promise<void> {
  const key = `${info.dev}:${info.ino}`;
  const first = info.nlink > 1 ? walk.linked.get(key) : undefined;
  if (first !== undefined) {
    if (!charge(walk, ENTRY_COST)) return leaveOut(walk, rel, 'over the workspace limit');
    linkSync(first, to);
    return;
  }
  // the size a sparse file claims counts: what is copied never passes the budget, holes or not
  if (!charge(walk, ENTRY_COST, roundUp(info.size))) return leaveOut(walk, rel, 'over the workspace limit');
  let input: FileHandle;
  try {
    input = await open(from, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (err) {
    return leaveOut(walk, rel, (err as NodeJS.ErrnoException).code ?? 'unreadable');
  }
  try {
    const opened = fstatSync(input.fd);
    if (!opened.isFile() || opened.ino !== info.ino) return leaveOut(walk, rel, 'changed while copied');
    const output = await open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, (info.mode & 0o777) | 0o600);
    try {
      await copyContent(input, output, info.size);
      await output.utimes(info.atime, info.mtime);
    } finally {
      await output.close();
    }
    walk.result.files += 1;
    if (info.nlink > 1) walk.linked.set(key, to);
  } finally {
    await input.close();
  }
}

/** Copies at most `size` bytes (a file grown since its lstat is cut there), leaving holes where zeros were. */
async function copyContent(input: FileHandle, output: FileHandle, size: number): Promise<void> {
  const buf = Buffer.alloc(Math.min(CHUNK, Math.max(size, 1)));
  let position = 0;
  while (position < size) {
    const { bytesRead } = await input.read(buf, 0, Math.min(buf.length, size - position), position);
    if (bytesRead === 0) break;
    // each run of parts holding data is written at once; parts of zeros are skipped
    let from = -1;
    for (let at = 0; ; at += HOLE) {
      const end = Math.min(at + HOLE, bytesRead);
      const data = at < bytesRead && !buf.subarray(at, end).equals(ZERO.subarray(0, end - at));
      if (data && from < 0) from = at;
      if (!data && from >= 0) {
        await output.write(buf, from, Math.min(at, bytesRead) - from, position + from);
        from = -1;
      }
      if (at >= bytesRead) break;
    }
    position += bytesRead;
  }
  await output.truncate(position);
}
