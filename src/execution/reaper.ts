/**
 * The reaper, in every process (several at once are safe: each takes the executions it handles with
 * `FOR UPDATE SKIP LOCKED`): an execution whose lease expired ends its run ERROR (`lease_expired`) when the
 * agent had started, or gives the run back to the queue when it had not. It also queues again a finished run
 * that a follow-up reached while it was ending (the follow-up API saw it still running), and sweeps old
 * workspaces of this host.
 */
import { RUNS_QUEUED_TOPIC, RUN_CHANGED_TOPIC } from '../kernel/topics.ts';
import type { Logger } from '../kernel/log.ts';
import { applyRunEvent } from '../runs/sql.ts';
import type { Bus } from '../kernel/bus.ts';
import type { Db } from '../kernel/db.ts';
import * as sql from './sql.ts';
import { sweepWorkspaces } from './workspace.ts';

export interface ReaperDeps {
  db: Db;
  bus: Bus;
  log: Logger;
  intervalMs: number;
  /** Where this host's workspaces live, and how long a finished one is kept. */
  workspaceRoot: string;
  workspaceRetentionMs: number;
  /** Where executions' configuration directories live (removed by the runner; swept after a crash). */
  configRoot?: string;
}

const SWEEP_EVERY_MS = 10 * 60_000;

export class Reaper {
  readonly #deps: ReaperDeps;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #lastSweep = 0;

  constructor(deps: ReaperDeps) {
    this.#deps = deps;
  }

  start(): void {
    this.#timer = setInterval(() => void this.tick(), this.#deps.intervalMs);
    this.#timer.unref();
  }

  tick(): Promise<void> {
    this.#running ??= this.#tick()
      .catch((err: unknown) => this.#deps.log.warn({ err }, 'reaper tick failed'))
      .finally(() => {
        this.#running = undefined;
      });
    return this.#running;
  }

  async #tick(): Promise<void> {
    while ((await this.reapExpiredLeases()) > 0);
    await this.requeueWaitingFollowups();
    if (Date.now() - this.#lastSweep > SWEEP_EVERY_MS) {
      this.#lastSweep = Date.now();
      await this.sweep();
      // presence records of processes and worker connections gone for a week
      await sql.deleteStalePresence(this.#deps.db);
    }
  }

  /** Ends executions whose lease expired; answers how many it handled (at most 100 a call). */
  async reapExpiredLeases(): Promise<number> {
    const changes: { runId: string; state: string; workerHost: string | null }[] = [];
    const count = await this.#deps.db.transaction(async (tx) => {
      const expired = await sql.lockExpiredExecutions(tx);
      for (const e of expired.rows) {
        const started = e.started_at !== null;
        await sql.endExecution(tx, e.id, started ? 'lost' : 'released');
        const at = e.lease_expires_at.toISOString();
        const run = started
          ? await applyRunEvent(tx, e.run_id, 'error', {
              executionId: e.id,
              statusMessage: {
                message: `The executor ${e.executor} stopped renewing its lease (expired ${at}): the agent process or its worker was lost.`,
                error_code: 'lease_expired',
              },
            })
          : await applyRunEvent(tx, e.run_id, 'release', {
              executionId: e.id,
              statusMessage: {
                message: `Back in the queue: ${e.executor} did not start the run before its lease expired (${at}).`,
              },
            });
        if (run) changes.push({ runId: run.id, state: run.state, workerHost: run.worker_host });
      }
      return expired.rowCount;
    });
    for (const c of changes) {
      this.#deps.log.warn({ runId: c.runId, state: c.state }, 'execution lease expired');
      await this.#deps.bus.publish(RUN_CHANGED_TOPIC, { run_id: c.runId, state: c.state });
      if (c.state === 'QUEUED')
        await this.#deps.bus.publish(RUNS_QUEUED_TOPIC, { run_id: c.runId, worker_host: c.workerHost });
    }
    return count;
  }

  /** A follow-up that reached a run while its execution was finishing, and found no one to take it. */
  async requeueWaitingFollowups(): Promise<void> {
    const waiting = await sql.runsWithUnconsumedFollowups(this.#deps.db);
    for (const { run_id } of waiting.rows) {
      const run = await applyRunEvent(this.#deps.db, run_id, 'continue', { statusMessage: null });
      if (run) await this.#deps.bus.publish(RUNS_QUEUED_TOPIC, { run_id, worker_host: run.worker_host });
    }
  }

  /** Removes this host's workspaces of executions that ended longer ago than the retention period. */
  async sweep(): Promise<string[]> {
    const { workspaceRoot, workspaceRetentionMs } = this.#deps;
    const now = Date.now();
    const candidates: string[] = [];
    await sweepWorkspaces(workspaceRoot, (id, modifiedAt) => {
      if (now - modifiedAt.getTime() > workspaceRetentionMs) candidates.push(id);
      return true;
    });
    await this.#sweepConfigDirs(now);
    if (candidates.length === 0) return [];
    const live = await sql.executionsToKeep(this.#deps.db, candidates, workspaceRetentionMs);
    const keep = new Set(live.rows.map((r) => r.id));
    return sweepWorkspaces(workspaceRoot, (id) => !candidates.includes(id) || keep.has(id));
  }

  /** Configuration directories of executions no longer running (their runner died before removing them). */
  async #sweepConfigDirs(now: number): Promise<void> {
    const { configRoot } = this.#deps;
    if (!configRoot) return;
    const candidates: string[] = [];
    await sweepWorkspaces(configRoot, (id, modifiedAt) => {
      if (now - modifiedAt.getTime() > 60_000) candidates.push(id);
      return true;
    });
    if (candidates.length === 0) return;
    const running = await sql.executionsToKeep(this.#deps.db, candidates, 0);
    const keep = new Set(running.rows.map((r) => r.id));
    await sweepWorkspaces(configRoot, (id) => !candidates.includes(id) || keep.has(id));
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    await this.#running;
  }
}
