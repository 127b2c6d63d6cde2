/**
 * The one way the engine makes known that runs changed, after the change committed: `runs.changed` for each run
 * whose state moved (executors stop a cancelled run, streams wake), and `runs.queued` hints for the runs that
 * are queued now (one per worker host: a hint means "look at the queue"). Messages are hints to look at the
 * database again: a lost one only delays its readers until their next poll.
 */
import type { Bus, WireMessages } from '../kernel/bus.ts';
import { RUN_CHANGED_TOPIC, RUNS_QUEUED_TOPIC } from '../kernel/topics.ts';

export interface RunChange {
  id: string;
  /** The state the change left; absent for a change beside the state (a follow-up). */
  state?: string;
  worker_host?: string | null;
  followupId?: string;
  /** A new run: only its `runs.queued` hint (nobody waits on a run it has not seen yet). */
  created?: boolean;
}

/** One `runs.queued` hint per worker host among `runs`. */
export function queuedHints(
  runs: readonly { id: string; worker_host: string | null }[],
): { run_id: string; worker_host: string | null }[] {
  const byHost = new Map<string | null, { run_id: string; worker_host: string | null }>();
  for (const run of runs)
    if (!byHost.has(run.worker_host)) byHost.set(run.worker_host, { run_id: run.id, worker_host: run.worker_host });
  return [...byHost.values()];
}

/** New runs: the hints their inserting statement sends to the other processes on its commit. */
export function queuedWireMessages(
  bus: Bus,
  runs: readonly { id: string; worker_host: string | null }[],
): WireMessages | undefined {
  return bus.wireMessages(RUNS_QUEUED_TOPIC, queuedHints(runs));
}

/** New runs already on the wire (queuedWireMessages): this process's subscribers only. */
export function announceQueuedLocally(bus: Bus, runs: readonly { id: string; worker_host: string | null }[]): void {
  for (const hint of queuedHints(runs)) bus.emitLocal(RUNS_QUEUED_TOPIC, hint);
}

/** Runs that changed (created, moved, given a follow-up); never rejects. */
export async function announceRunChanges(bus: Bus, changes: readonly RunChange[]): Promise<void> {
  const queued: { id: string; worker_host: string | null }[] = [];
  const sends: Promise<void>[] = [];
  for (const c of changes) {
    if (!c.created && (c.state !== undefined || c.followupId !== undefined))
      sends.push(
        bus.publish(RUN_CHANGED_TOPIC, {
          run_id: c.id,
          ...(c.state !== undefined ? { state: c.state } : {}),
          ...(c.followupId !== undefined ? { followup_id: c.followupId } : {}),
        }),
      );
    if (c.state === 'QUEUED') queued.push({ id: c.id, worker_host: c.worker_host ?? null });
  }
  for (const hint of queuedHints(queued)) sends.push(bus.publish(RUNS_QUEUED_TOPIC, hint));
  await Promise.all(sends.map((s) => s.catch(() => {})));
}
