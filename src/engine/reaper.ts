/**
 * The run engine's reaper: ends executions whose lease expired (an executor, a worker or a Job's leader stopped
 * renewing it): a started one ends its run ERROR, one never started gives its run back to the queue. It also
 * queues again a finished run holding a follow-up nobody took (it arrived while the execution was finishing).
 */
import type { Bus } from '../kernel/bus.ts';
import type { Db } from '../kernel/db.ts';
import type { Logger } from '../kernel/log.ts';
import { Loop } from '../kernel/loop.ts';
import { EXECUTIONS_ENDED_TOPIC } from '../kernel/topics.ts';
import { announceRunChanges } from './announce.ts';
import * as sql from './sql.ts';

export interface ReaperDeps {
  db: Db;
  bus: Bus;
  log: Logger;
  intervalMs: number;
}

export class Reaper {
  readonly #deps: ReaperDeps;
  #loop: Loop | undefined;
  #running: Promise<void> | undefined;

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
  }

  /** Ends executions whose lease expired; answers how many it handled (at most 100 a call). */
  async reapExpiredLeases(): Promise<number> {
    const changes: { runId: string; state: string; workerHost: string | null }[] = [];
    const ended: { execution_ids: string[]; run_ids: string[] } = { execution_ids: [], run_ids: [] };
    const count = await this.#deps.db.transaction(async (tx) => {
      const expired = await sql.lockExpiredExecutions(tx);
      for (const e of expired.rows) {
        const started = e.started_at !== null;
        await sql.endExecution(tx, e.id, started ? 'lost' : 'released');
        ended.execution_ids.push(e.id);
        ended.run_ids.push(e.run_id);
        const at = e.lease_expires_at.toISOString();
        const run = started
          ? await sql.applyRunEvent(tx, e.run_id, 'error', {
              executionId: e.id,
              statusMessage: {
                message: `The executor ${e.executor} stopped renewing its lease (expired ${at}): the agent process or its worker was lost.`,
                error_code: 'lease_expired',
              },
            })
          : await sql.applyRunEvent(tx, e.run_id, 'release', {
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
    if (ended.execution_ids.length > 0) this.#deps.bus.emitLocal(EXECUTIONS_ENDED_TOPIC, ended);
    return count;
  }

  /** A follow-up that reached a run while its execution was finishing, and found no one to take it. */
  async requeueWaitingFollowups(): Promise<void> {
    const waiting = await sql.runsWithUnconsumedFollowups(this.#deps.db);
    for (const { run_id } of waiting.rows) {
      const run = await sql.applyRunEvent(this.#deps.db, run_id, 'continue', { statusMessage: null });
      if (run) await announceRunChanges(this.#deps.bus, [run]);
    }
  }

  async stop(): Promise<void> {
    await this.#loop?.stop();
    await this.#running;
  }
}
