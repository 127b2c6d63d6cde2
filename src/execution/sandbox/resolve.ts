/**
 * What an agent's command needs to be runnable inside a sandbox: its executable found on PATH, the
 * interpreter its `#!` line names (for `#!/usr/bin/env node`, the `node` on PATH), and the directories to
 * bind read-only for both. Kept explicit: the command's own directory (or, inside a package tree, the
 * outermost `node_modules`), and for an interpreter its directory on PATH and its installation prefix.
 */
import { constants } from 'node:fs';
import { access, open, realpath } from 'node:fs/promises';
import path from 'node:path';

/** Directories every sandbox binds from the system; a tool under them needs no bind of its own. */
export const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'] as const;

export interface ResolvedCommand {
  /** The executable's real path (symlinks resolved): what the sandbox starts. */
  executable: string;
  /** Directories to bind read-only, outside the system directories. */
  readOnly: string[];
}

async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The path `command` names: itself when it has a slash (relative to `cwd`), else the first match on `searchPath`. */
export async function findOnPath(command: string, searchPath: string, cwd: string): Promise<string | undefined> {
  if (command.includes('/')) {
    const file = path.resolve(cwd, command);
    return (await isExecutable(file)) ? file : undefined;
  }
  for (const dir of searchPath.split(':')) {
    if (!dir || !path.isAbsolute(dir)) continue;
    const file = path.join(dir, command);
    if (await isExecutable(file)) return file;
  }
  return undefined;
}

/** The interpreter a `#!` line names, and its first argument; undefined for a binary. */
async function shebang(file: string): Promise<{ interpreter: string; arg: string | undefined } | undefined> {
  const handle = await open(file, 'r');
  try {
    const buf = Buffer.alloc(256);
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    const head = buf.subarray(0, bytesRead).toString('latin1');
    if (!head.startsWith('#!')) return undefined;
    const line = head.slice(2).split('\n')[0]!.trim();
    const [interpreter, ...rest] = line.split(/\s+/);
    if (!interpreter) return undefined;
    return { interpreter, arg: rest.join(' ') || undefined };
  } finally {
    await handle.close();
  }
}

export function under(dir: string, file: string): boolean {
  return file === dir || file.startsWith(dir.endsWith('/') ? dir : `${dir}/`);
}

const inSystem = (p: string) => SYSTEM_DIRS.some((d) => under(d, p));

/** The directory a command file needs: its package tree's outermost `node_modules`, else its own directory. */
function commandDir(real: string): string {
  const parts = real.split(path.sep);
  const i = parts.indexOf('node_modules');
  return i > 0 ? parts.slice(0, i + 1).join(path.sep) : path.dirname(real);
}

/** An installation's prefix: `<prefix>/bin/node` → `<prefix>` (so `lib/` beside it comes along), else its directory. */
function installPrefix(real: string): string {
  const dir = path.dirname(real);
  return path.basename(dir) === 'bin' ? path.dirname(dir) : dir;
}

/**
 * Resolves a command for the sandbox. Undefined when it is not found or not executable (the caller reports
 * the harness unavailable, as the spawn of a missing executable would).
 */
export async function resolveCommand(
  command: string,
  searchPath: string,
  cwd: string,
): Promise<ResolvedCommand | undefined> {
  const found = await findOnPath(command, searchPath, cwd);
  if (!found) return undefined;
  const executable = await realpath(found);
  const dirs = new Set<string>([commandDir(executable)]);
  const bang = await shebang(executable).catch(() => undefined);
  if (bang) {
    let interpreter: string | undefined = bang.interpreter;
    if (path.basename(interpreter) === 'env' && bang.arg) {
      const name = bang.arg.replace(/^-S\s+/, '').split(/\s+/)[0]!;
      interpreter = await findOnPath(name, searchPath, cwd);
      // the directory `env` finds it in must exist inside too
      if (interpreter) dirs.add(path.dirname(interpreter));
    }
    if (interpreter) {
      const real = await realpath(interpreter).catch(() => undefined);
      if (real) dirs.add(installPrefix(real));
    }
  }
  return { executable, readOnly: [...dirs].filter((d) => !inSystem(d)) };
}
