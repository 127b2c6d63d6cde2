/**
 * The data directory is private to the server's user: the directory 0700, nothing in it with a group or
 * world bit. Processes started by the `agentyard` command run with umask 077, so what they create is
 * private already; a data directory from an earlier start (or one made by hand) is checked and tightened
 * once at start, with a warning. Workspaces are not walked (agents' trees can be large): their directory is
 * 0700, which no other user can pass.
 */
import { chmod, lstat, mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';

/** The umask of the server's processes: new files 0600, new directories 0700. */
export const PRIVATE_UMASK = 0o077;

/** Entries under the data directory whose contents are not walked. */
const NOT_WALKED = new Set(['workspaces']);

export interface Tightened {
  /** Paths whose mode had group or world bits (now removed). */
  paths: string[];
}

/** Creates `dataDir` (0700) when missing, and removes group and world bits from it and what it holds. */
export async function makeDataDirPrivate(dataDir: string): Promise<Tightened> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const paths: string[] = [];
  const tighten = async (file: string, mode: number): Promise<void> => {
    if ((mode & 0o077) === 0) return;
    await chmod(file, mode & 0o7700);
    paths.push(file);
  };
  const stack = [dataDir];
  await tighten(dataDir, (await lstat(dataDir)).mode);
  while (stack.length > 0) {
    const dir = stack.pop()!;
    let entries: string[];
    try {
      entries = await readdir(dir);
    } catch {
      continue;
    }
    for (const name of entries) {
      const file = path.join(dir, name);
      let info;
      try {
        info = await lstat(file);
      } catch {
        continue;
      }
      if (info.isSymbolicLink()) continue;
      await tighten(file, info.mode);
      if (info.isDirectory() && !(dir === dataDir && NOT_WALKED.has(name))) stack.push(file);
    }
  }
  return { paths };
}
