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
import { sweepWorkspaces } from './workspace.ts';

export interface ReaperDeps {
  db: Db;
  bus: Bus;
  log: Logger;
  intervalMs: number;
  /** Where this host's workspaces live, and how long a finished one is kept. */
  workspaceRoot: string;
  workspaceRetentionMs: number;
}

interface Expired {
  id: string;
  run_id: string;
  executor: string;
  started_at: Date | null;
  lease_expires_at: Date;
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
      await this.#deps.db.query(`DELETE FROM executor_processes WHERE last_seen_at < ay_now() - interval '7 days'`);
      await this.#deps.db.query(`DELETE FROM worker_connections WHERE last_seen_at < ay_now() - interval '7 days'`);
    }
  }

  /** Ends executions whose lease expired; answers how many it handled (at most 100 a call). */
  async reapExpiredLeases(): Promise<number> {
    const changes: { runId: string; state: string; workerHost: string | null }[] = [];
    const count = await this.#deps.db.transaction(async (tx) => {
      const expired = await tx.query<Expired>(
        `SELECT id, run_id, executor, started_at, lease_expires_at FROM executions
         WHERE ended_at IS NULL AND lease_expires_at < ay_now()
         ORDER BY lease_expires_at LIMIT 100 FOR UPDATE SKIP LOCKED`,
      );
      for (const e of expired.rows) {
        const started = e.started_at !== null;
        await tx.query(`UPDATE executions SET ended_at = ay_now(), outcome = $2 WHERE id = $1`, [
          e.id,
          started ? 'lost' : 'released',
        ]);
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
    const waiting = await this.#deps.db.query<{ run_id: string }>(
      `SELECT DISTINCT f.run_id FROM run_followups f JOIN runs r ON r.id = f.run_id
       WHERE f.consumed_by_execution IS NULL AND r.state IN ('SUCCEEDED', 'FAILED', 'ERROR') AND r.execution_id IS NOT NULL
         AND f.created_at < ay_now() - interval '1 second'
       LIMIT 100`,
    );
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
    if (candidates.length === 0) return [];
    const live = await this.#deps.db.query<{ id: string }>(
      `SELECT id FROM executions WHERE id = ANY($1::text[]) AND (ended_at IS NULL OR ended_at > ay_now() - $2 * interval '1 millisecond')`,
      [candidates, workspaceRetentionMs],
    );
    const keep = new Set(live.rows.map((r) => r.id));
    return sweepWorkspaces(workspaceRoot, (id) => !candidates.includes(id) || keep.has(id));
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    await this.#running;
  }
}
