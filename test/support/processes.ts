/**
 * Process ids read from files that test agents write, and signals sent to them. A pid read too early (an
 * empty or half-written file) must never become 0 or -1: `kill(0)` signals the test runner's own process
 * group and `kill(-1)` every process the user owns, so both are refused here.
 */
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

/** The pid a file holds, or undefined while the file is missing or does not yet hold a whole pid. */
export function readPidFile(file: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  return /^\s*\d+\s*$/.test(text) ? validPid(Number(text)) : undefined;
}

function validPid(pid: number): number | undefined {
  return Number.isSafeInteger(pid) && pid > 1 && pid !== process.pid ? pid : undefined;
}

/** Sends `signal` to one process (`group: false`) or to the process group it leads; a gone target is fine. */
export function killQuietly(pid: number | undefined, signal: NodeJS.Signals, options: { group?: boolean } = {}): void {
  if (pid === undefined || validPid(pid) === undefined) throw new Error(`refusing to signal pid ${String(pid)}`);
  try {
    process.kill(options.group ? -pid : pid, signal);
  } catch {
    // already gone
  }
}

/**
 * The host pid of a process that reported `pid` from inside an agent's sandbox (its own pid namespace) while
 * working in `workspace`; `pid` itself when the agent is not namespaced. Undefined when no such process runs.
 */
export function hostPid(pid: number | undefined, workspace: string): number | undefined {
  if (pid === undefined) return undefined;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const nspid = /^NSpid:\s*(.*)$/m
        .exec(readFileSync(`/proc/${entry}/status`, 'utf8'))?.[1]
        ?.trim()
        .split(/\s+/);
      if (!nspid || Number(nspid.at(-1)) !== pid) continue;
      const cwd = readlinkSync(`/proc/${entry}/cwd`);
      if (cwd === workspace || cwd.startsWith(`${workspace}/`)) return validPid(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return undefined;
}
