/**
 * Files in a workspace, as the server reads and writes them: an agent owns the workspace and may have left a
 * symbolic link at any path (or in the middle of one) to make the server write or read a host file. Every
 * operation here walks the path one component at a time under the workspace's root, opening each directory
 * with O_DIRECTORY | O_NOFOLLOW and naming the next component relative to the directory already open
 * (`/proc/self/fd/<fd>/<name>`, Linux's openat), so no link is ever followed and no component can be swapped
 * for a link between a check and its use. A link found on the way is an error that names it. Without
 * /proc (macOS) each component is still opened with O_NOFOLLOW, by its full path.
 *
 * Writes go to a new file created beside the target (O_CREAT | O_EXCL | O_NOFOLLOW) that is then renamed over
 * it: what replaces the name is the server's file, never the inode a hard link shares with something else.
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readSync,
  readdirSync,
  renameSync,
  unlinkSync,
} from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_DIRECTORY, O_NONBLOCK } = constants;
const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;

/** A path of a workspace the server refuses: a symbolic link on the way, a component leaving it, a non-file. */
export class WorkspacePathError extends Error {
  /** The path relative to the workspace, up to the offending component. */
  readonly path: string;
  constructor(relative: string, reason: string) {
    super(`${relative} ${reason}`);
    this.name = 'WorkspacePathError';
    this.path = relative;
  }
}

const LINK = 'is a symbolic link (the server follows no link in a workspace)';

let procFd: boolean | undefined;
function hasProcFd(): boolean {
  procFd ??= existsSync('/proc/self/fd');
  return procFd;
}

/** The components of a relative path; `..`, an absolute path or an empty one leave the workspace. */
export function pathComponents(relative: string): string[] {
  const parts = relative.split(/[/\\]+/).filter((p) => p !== '' && p !== '.');
  if (path.isAbsolute(relative) || parts.length === 0 || parts.includes('..') || parts.some((p) => p.includes('\0')))
    throw new WorkspacePathError(relative || '(empty path)', 'leaves the workspace');
  return parts;
}

/** An open directory of the walk: its descriptor and how its entries are named. */
interface OpenDir {
  fd: number;
  /** `/proc/self/fd/<fd>`, or the directory's full path without /proc. */
  base: string;
  /** Its path relative to the workspace, for messages. */
  shown: string;
}

function entry(dir: OpenDir, name: string): string {
  return `${dir.base}/${name}`;
}

function shownPath(dir: OpenDir, name: string): string {
  return dir.shown ? `${dir.shown}/${name}` : name;
}

function openDirAt(parent: OpenDir | undefined, name: string, full: string): OpenDir {
  const target = parent ? entry(parent, name) : full;
  const shown = parent ? shownPath(parent, name) : '';
  let fd: number;
  try {
    fd = openSync(target, DIR_FLAGS);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOTDIR') {
      let link = code === 'ELOOP';
      try {
        link ||= lstatSync(target).isSymbolicLink();
      } catch {
        // gone meanwhile: reported as not a directory
      }
      throw new WorkspacePathError(shown || '.', link ? LINK : 'is not a directory');
    }
    throw err;
  }
  return { fd, base: hasProcFd() ? `/proc/self/fd/${fd}` : full, shown };
}

/**
 * Opens the directory `dirs` names under `root`, one component at a time, creating missing ones (0700) when
 * `create` is set. The caller closes it.
 */
function openDirectory(root: string, dirs: readonly string[], create: boolean): OpenDir {
  let current = openDirAt(undefined, '', root);
  let full = root;
  for (const name of dirs) {
    full = path.join(full, name);
    try {
      if (create) {
        try {
          mkdirSync(entry(current, name), { mode: 0o700 });
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        }
      }
      const next = openDirAt(current, name, full);
      closeSync(current.fd);
      current = next;
    } catch (err) {
      closeSync(current.fd);
      throw err;
    }
  }
  return current;
}

/** Makes the directory `relative` (and the ones above it) under `root` without following a link; answers its path. */
export function makeDirectoryInside(root: string, relative: string): string {
  const parts = pathComponents(relative);
  closeSync(openDirectory(root, parts, true).fd);
  return path.join(root, ...parts);
}

/** Refuses a link or a non-file where a file is to be written or read. */
function checkFileEntry(dir: OpenDir, name: string): boolean {
  try {
    const info = lstatSync(entry(dir, name));
    if (info.isSymbolicLink()) throw new WorkspacePathError(shownPath(dir, name), LINK);
    if (!info.isFile()) throw new WorkspacePathError(shownPath(dir, name), 'is not a regular file');
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/**
 * Writes a file under `root` (creating its directories, 0700), never through a link: a link at the path or on
 * the way is an error naming it. Answers the file's path.
 */
export async function writeFileInside(
  root: string,
  relative: string,
  content: string | Buffer,
  mode = 0o600,
): Promise<string> {
  const parts = pathComponents(relative);
  const name = parts.pop()!;
  const dir = openDirectory(root, parts, true);
  try {
    checkFileEntry(dir, name);
    const temp = entry(dir, `.agentyard-${randomBytes(8).toString('hex')}.tmp`);
    const handle = await open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
    try {
      try {
        await handle.writeFile(content);
      } finally {
        await handle.close();
      }
      renameSync(temp, entry(dir, name));
    } catch (err) {
      try {
        unlinkSync(temp);
      } catch {
        // renamed, or never made
      }
      throw err;
    }
  } finally {
    closeSync(dir.fd);
  }
  return path.join(root, ...parts, name);
}

/**
 * Reads a regular file under `root` without following a link (and without blocking on a FIFO an agent left
 * there). Errors: a `WorkspacePathError` naming the link or non-file, ENOENT, or a file over `maxBytes`.
 */
export function readFileInside(root: string, relative: string, maxBytes = Number.MAX_SAFE_INTEGER): Buffer {
  const parts = pathComponents(relative);
  const name = parts.pop()!;
  const dir = openDirectory(root, parts, false);
  let fd: number;
  try {
    try {
      fd = openSync(entry(dir, name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ELOOP') throw new WorkspacePathError(shownPath(dir, name), LINK);
      throw err;
    }
  } finally {
    closeSync(dir.fd);
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) throw new WorkspacePathError(relative, 'is not a regular file');
    if (info.size > maxBytes) throw new WorkspacePathError(relative, `is over ${maxBytes} bytes`);
    const buf = Buffer.alloc(info.size);
    let read = 0;
    while (read < buf.length) {
      const n = readSync(fd, buf, read, buf.length - read, read);
      if (n === 0) break;
      read += n;
    }
    return buf.subarray(0, read);
  } finally {
    closeSync(fd);
  }
}

/** Names in the directory `relative` under `root` (links on the way refused); empty when it does not exist. */
export function listInside(root: string, relative: string): string[] {
  let dir: OpenDir;
  try {
    dir = openDirectory(root, pathComponents(relative), false);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  try {
    return readdirSync(dir.base);
  } finally {
    closeSync(dir.fd);
  }
}

/** Whether a regular file exists at `relative` under `root` (a link there, or on the way, is an error). */
export function fileExistsInside(root: string, relative: string): boolean {
  const parts = pathComponents(relative);
  const name = parts.pop()!;
  let dir: OpenDir;
  try {
    dir = openDirectory(root, parts, false);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
  try {
    return checkFileEntry(dir, name);
  } finally {
    closeSync(dir.fd);
  }
}
