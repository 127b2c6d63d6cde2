/**
 * CPU time of processes and threads from /proc (Linux), for benchmarks that need to tell what a request
 * costs apart from how long it waits: on a machine shared by the server, its database and the load generator,
 * a lower rate can mean more CPU per request or cores left idle between the stages.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** user + system seconds and the parent PID from a /proc/…/stat file, or undefined when it is gone. */
function readStat(file: string): { seconds: number; ppid: number } | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  // The command name may hold spaces and parentheses: the fields start after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { ppid: Number(fields[1]), seconds: (Number(fields[11]) + Number(fields[12])) / clockTicks() };
}

/** CPU seconds each thread of a process has used, summed by thread name (`MainThread`, `WorkerThread`, `V8Worker`, …). */
export function threadCpu(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return byName;
  }
  for (const tid of tids) {
    const stat = readStat(`/proc/${pid}/task/${tid}/stat`);
    if (!stat) continue;
    let name: string;
    try {
      name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
    } catch {
      continue;
    }
    byName.set(name, (byName.get(name) ?? 0) + stat.seconds);
  }
  return byName;
}

/** CPU seconds of a process and its living children (a PostgreSQL postmaster and its backends). */
export function processTreeCpu(pid: number): number {
  let total = readStat(`/proc/${pid}/stat`)?.seconds ?? 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(`/proc/${entry}/stat`);
    if (stat?.ppid === pid) total += stat.seconds;
  }
  return total;
}

/** The difference of two threadCpu readings, by thread name. */
export function threadCpuSince(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  const spent = new Map<string, number>();
  for (const [name, seconds] of after) spent.set(name, seconds - (before.get(name) ?? 0));
  return spent;
}
