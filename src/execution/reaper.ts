import type { Logger } from '../kernel/log.ts';
import type { Bus } from '../kernel/bus.ts';
import type { Db } from '../kernel/db.ts';
import * as sql from './sql.ts';
import { sweepWorkspaces } from './workspace.ts';
import { applyRunEvent } from '../engine/engine.ts';
import * as engine from '../engine/engine.ts';
import { announceRunChanges } from '../engine/announce.ts';
import { Loop } from '../kernel/loop.ts';

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
  #loop: Loop | undefined;
  #running: Promise<void> | undefined;
  #lastSweep = 0;

  constructor(deps: ReaperDeps) {
    this.#deps = deps;
  }

  start(): void {
    this.#loop = new Loop({
      name: 'reaper',
      everyMs: this.#deps.intervalMs,
      atStart: false,
      pass: () => this.tick(),
    }).start();
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
      const expired = await engine.lockExpiredExecutions(tx);
      for (const e of expired.rows) {
        const started = e.started_at !== null;
        await engine.endExecution(tx, e.id, started ? 'lost' : 'released');
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
    for (const c of changes) this.#deps.log.warn({ runId: c.runId, state: c.state }, 'execution lease expired');
    await announceRunChanges(
      this.#deps.bus,
      changes.map((c) => ({ id: c.runId, state: c.state, worker_host: c.workerHost })),
    );
    return count;
  }

  /** A follow-up that reached a run while its execution was finishing, and found no one to take it. */
  async requeueWaitingFollowups(): Promise<void> {
    const waiting = await sql.runsWithUnconsumedFollowups(this.#deps.db);
    for (const { run_id } of waiting.rows) {
      const run = await applyRunEvent(this.#deps.db, run_id, 'continue', { statusMessage: null });
      if (run) await announceRunChanges(this.#deps.bus, [run]);
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
    await this.#loop?.stop();
    await this.#running;
  }
}
