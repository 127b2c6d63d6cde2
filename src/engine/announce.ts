/**
 * The one way the engine makes known that runs changed, after the change committed: `runs.changed` for each run
 * whose state moved (executors stop a cancelled run, streams wake), `runs.queued` hints for the runs that
 * are queued now (one per worker host: a hint means "look at the queue"), and, in this process only, a typed
 * `runs.lifecycle` step per run (created, claimed, started, queued, blocked, finished). Messages are hints to
 * look at the database again: a lost one only delays its readers until their next poll.
 */
import type { Bus, WireMessages } from '../kernel/bus.ts';
import type { RunLifecycleEvent } from '../kernel/topics.ts';
import { RUN_CHANGED_TOPIC, RUN_LIFECYCLE_TOPIC, RUNS_QUEUED_TOPIC } from '../kernel/topics.ts';
import { TERMINAL_STATES } from './state-machine.ts';
import type { RunState } from './state-machine.ts';

export interface RunChange {
  id: string;
  /** The state the change left; absent for a change beside the state (a follow-up). */
  state?: string;
  worker_host?: string | null;
  followupId?: string;
  /** A new run: only its `runs.queued` hint (nobody waits on a run it has not seen yet). */
  created?: boolean;
}

/** The lifecycle step a run's new state is (`created`: a run just inserted). */
export function lifecycleStep(state: string, created = false): RunLifecycleEvent['event'] {
  if (created) return 'created';
  if (state === 'CLAIMED') return 'claimed';
  if (state === 'INPROGRESS' || state === 'PENDING') return 'started';
  if (state === 'BLOCKED') return 'blocked';
  if (TERMINAL_STATES.has(state as RunState)) return 'finished';
  return 'queued';
}

/** Tells this process's subscribers the lifecycle steps of runs (`runs.lifecycle`, never on the wire). */
export function emitLifecycle(bus: Bus, events: readonly RunLifecycleEvent[]): void {
  for (const e of events) bus.emitLocal(RUN_LIFECYCLE_TOPIC, e);
}

/** Runs in the states they were left in, as lifecycle steps. */
export function emitStates(bus: Bus, runs: readonly { id: string; state: string }[], created = false): void {
  emitLifecycle(
    bus,
    runs.map((r) => ({ run_id: r.id, event: lifecycleStep(r.state, created), state: r.state })),
  );
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
export function announceQueuedLocally(
  bus: Bus,
  runs: readonly { id: string; state: string; worker_host: string | null }[],
): void {
  emitStates(bus, runs, true);
  for (const hint of queuedHints(runs)) bus.emitLocal(RUNS_QUEUED_TOPIC, hint);
}

/** Runs that changed (created, moved, given a follow-up); never rejects. */
export async function announceRunChanges(bus: Bus, changes: readonly RunChange[]): Promise<void> {
  const queued: { id: string; worker_host: string | null }[] = [];
  const sends: Promise<void>[] = [];
  emitLifecycle(
    bus,
    changes.flatMap((c) =>
      c.state === undefined ? [] : [{ run_id: c.id, event: lifecycleStep(c.state, c.created), state: c.state }],
    ),
  );
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
