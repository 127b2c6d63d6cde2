/**
 * The process limit of a bubblewrap sandbox. bubblewrap sets no resource limit itself, so:
 *
 * - A **pids cgroup** per execution when this process may make one (root with a writable pids hierarchy, or a
 *   delegated cgroup v2 subtree): every process and thread of the sandbox counts, whatever its uid. The
 *   launcher joins the cgroup before it execs bubblewrap, so nothing escapes it.
 * - Otherwise **RLIMIT_NPROC**, set inside the sandbox by `prlimit` before the agent starts. The kernel counts
 *   it per user namespace and uid (Linux >= 5.14), and every sandbox has a user namespace of its own, so the
 *   limit is per sandbox. It does not hold for a server running as root: the agent's uid maps to root
 *   outside, and the kernel exempts root from RLIMIT_NPROC. (Before Linux 5.14 it counts every process of
 *   the server's uid, the server's own included.)
 *
 * The same `prlimit` also sets RLIMIT_FSIZE: no single file the agent writes grows past the workspace limit.
 */
import { access, mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { constants } from 'node:fs';
import path from 'node:path';
import type { ExecutionLimits } from '../limits.ts';

/** Where the sandbox's prlimit lives; /usr is bound into every sandbox, so the host's path is the sandbox's. */
export const PRLIMIT = '/usr/bin/prlimit';

export type CgroupProbe = { ok: true; base: string } | { ok: false; reason: string };

/** The cgroup directory this process's pids controller shows it in, from /proc/self/cgroup. */
async function ownPidsCgroup(): Promise<string | undefined> {
  const lines = (await readFile('/proc/self/cgroup', 'utf8')).split('\n');
  for (const line of lines) {
    const [, controllers, where] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
    if (controllers?.split(',').includes('pids')) return path.join('/sys/fs/cgroup/pids', where!);
  }
  const unified = lines.find((l) => l.startsWith('0::'));
  if (!unified) return undefined;
  const dir = path.join('/sys/fs/cgroup', unified.slice(3));
  const available = await readFile(path.join(dir, 'cgroup.controllers'), 'utf8').catch(() => '');
  if (!available.split(/\s+/).includes('pids')) return undefined;
  const enabled = await readFile(path.join(dir, 'cgroup.subtree_control'), 'utf8').catch(() => '');
  if (!enabled.split(/\s+/).includes('pids')) await writeFile(path.join(dir, 'cgroup.subtree_control'), '+pids');
  return dir;
}

let probe: Promise<CgroupProbe> | undefined;

/** Whether this process can make pids cgroups (probed once: a cgroup made, limited and removed). */
export function pidsCgroupAvailability(): Promise<CgroupProbe> {
  probe ??= (async (): Promise<CgroupProbe> => {
    try {
      const base = await ownPidsCgroup();
      if (!base) return { ok: false, reason: 'no pids cgroup controller' };
      const test = path.join(base, `agentyard-probe-${process.pid}`);
      await mkdir(test);
      try {
        await writeFile(path.join(test, 'pids.max'), '1');
      } finally {
        await rmdir(test);
      }
      return { ok: true, base };
    } catch (err) {
      return { ok: false, reason: `no pids cgroup can be made here (${(err as NodeJS.ErrnoException).code ?? err})` };
    }
  })();
  return probe;
}

/** Makes the pids cgroup of an execution, limited to `max` processes; answers its directory. */
export async function createPidsCgroup(base: string, executionId: string, max: number): Promise<string> {
  const dir = path.join(base, `agentyard-${executionId}`);
  await mkdir(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err;
  });
  await writeFile(path.join(dir, 'pids.max'), String(max));
  return dir;
}

/** Removes an execution's cgroup once its processes are gone (they die with the sandbox's pid namespace). */
export async function removePidsCgroup(dir: string): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      await rmdir(dir);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if (code !== 'EBUSY') return;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** The launcher that puts itself into a cgroup and then execs the sandbox: `sh -c … <procs file> <command…>`. */
export function inCgroup(dir: string, command: string, args: readonly string[]): { command: string; args: string[] } {
  return {
    command: '/bin/sh',
    args: ['-c', 'echo $$ > "$0" && exec "$@"', path.join(dir, 'cgroup.procs'), command, ...args],
  };
}

/** Whether `prlimit` is there to set the sandbox's rlimits. */
export async function hasPrlimit(): Promise<boolean> {
  try {
    await access(PRLIMIT, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export interface ProcessLimitPlan {
  /** Run inside the sandbox before the command (`prlimit --nproc=… --fsize=… --`), or nothing. */
  wrapper: string[];
  /** The execution's pids cgroup, when one was made. */
  cgroup: string | undefined;
  /** How the limit holds, for the run's status event. */
  notes: string[];
}

/** How the sandbox's process limit (and its largest file) is enforced on this host, as the top of this file says. */
export async function planProcessLimit(
  limits: Pick<ExecutionLimits, 'processes' | 'workspaceBytes'>,
  executionId: string,
): Promise<ProcessLimitPlan> {
  const notes: string[] = [];
  const prlimit = await hasPrlimit();
  const wrapper = prlimit ? [PRLIMIT, `--nproc=${limits.processes}`, `--fsize=${limits.workspaceBytes}`, '--'] : [];
  const cgroups = await pidsCgroupAvailability();
  let cgroup: string | undefined;
  let cgroupProblem = cgroups.ok ? '' : cgroups.reason;
  if (cgroups.ok) {
    try {
      cgroup = await createPidsCgroup(cgroups.base, executionId, limits.processes);
    } catch (err) {
      cgroupProblem = `the execution's pids cgroup could not be made (${(err as NodeJS.ErrnoException).code ?? err})`;
    }
  }
  if (cgroup) {
    notes.push(`at most ${limits.processes} processes (pids cgroup)`);
  } else if (prlimit && process.getuid?.() !== 0) {
    notes.push(`at most ${limits.processes} processes (RLIMIT_NPROC)`);
  } else {
    const why = prlimit ? 'the server runs as root, which RLIMIT_NPROC exempts' : `${PRLIMIT} is missing`;
    notes.push(`process limit not enforced: ${why}, and ${cgroupProblem}`);
  }
  return { wrapper, cgroup, notes };
}
