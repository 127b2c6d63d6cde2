/**
 * What the server records about executions, wherever they run (its own executors or a self-hosted worker):
 * the start, the events, heartbeats, and the end, each a compare-and-set guarded by the execution still being
 * the run's current one, so an executor that lost its lease changes nothing.
 */
import type { FastifyBaseLogger } from 'fastify';
import { appendRunEvents, RUN_EVENTS_TOPIC } from '../runs/events.ts';
import type { NewRunEvent } from '../runs/events.ts';
import type { RunRow } from '../runs/model.ts';
import { applyRunEvent } from '../runs/plans.ts';
import type { RunEvent } from '../runs/state-machine.ts';
import { RUN_CHANGED_TOPIC, RUNS_QUEUED_TOPIC } from '../runs/service.ts';
import type { Bus } from '../store/bus.ts';
import type { Db, Queryable } from '../store/db.ts';
import { ulid } from '../util/ids.ts';
import type { AgentEvent, ExecutionOutcome } from './plan.ts';

const OUTCOME_EVENT: Partial<Record<ExecutionOutcome['kind'], RunEvent>> = { succeeded: 'succeed', failed: 'fail', error: 'error' };

export interface LiveCheck {
  executionId: string;
  /** stop: the run was cancelled, or the execution lost its lease or is no longer the run's. */
  verdict: 'live' | 'cancelled' | 'lost';
}

function toNewEvents(events: readonly AgentEvent[]): NewRunEvent[] {
  return events.map((e) => {
    const at = e.at ? new Date(e.at) : undefined;
    return { type: e.type, data: e.data, ...(at && !Number.isNaN(at.getTime()) ? { occurredAt: at } : {}) };
  });
}

export class ExecutionRecorder {
  readonly #db: Db;
  readonly #bus: Bus;
  readonly #log: FastifyBaseLogger;

  constructor(db: Db, bus: Bus, log: FastifyBaseLogger) {
    this.#db = db;
    this.#bus = bus;
    this.#log = log;
  }

  /**
   * The agent is starting: CLAIMED → INPROGRESS, the follow-ups in its prompt consumed. False (nothing
   * written) when the execution lost its lease or the run left CLAIMED (cancelled meanwhile).
   */
  async started(input: { executionId: string; runId: string; workspace: string; leaseMs: number; followupIds: readonly string[]; where: string }): Promise<boolean> {
    const NOT_STARTED = Symbol('not started');
    try {
      await this.#db.transaction(async (tx) => {
        const exec = await tx.query(
          `UPDATE executions SET started_at = ay_now(), workspace = $2, heartbeat_at = ay_now(),
             lease_expires_at = ay_now() + $3 * interval '1 millisecond'
           WHERE id = $1 AND ended_at IS NULL RETURNING id`,
          [input.executionId, input.workspace, input.leaseMs],
        );
        if (exec.rowCount === 0) throw NOT_STARTED;
        const run = await applyRunEvent(tx, input.runId, 'start', { executionId: input.executionId, statusMessage: { message: `Running on ${input.where}` } });
        if (!run) throw NOT_STARTED;
        if (input.followupIds.length) await this.#consume(tx, input.runId, input.executionId, input.followupIds);
      });
    } catch (err) {
      if (err === NOT_STARTED) return false;
      throw err;
    }
    await this.#bus.publish(RUN_CHANGED_TOPIC, { run_id: input.runId, state: 'INPROGRESS' });
    return true;
  }

  async #consume(tx: Queryable, runId: string, executionId: string, followupIds: readonly string[]): Promise<void> {
    await tx.query(
      `UPDATE run_followups SET consumed_by_execution = $3, consumed_at = ay_now()
       WHERE run_id = $1 AND id = ANY($2::text[]) AND consumed_by_execution IS NULL`,
      [runId, followupIds, executionId],
    );
  }

  /** Stores events in order; follow-ups they report delivered are consumed, artifacts are added to the run. */
  async events(runId: string, executionId: string, events: readonly AgentEvent[]): Promise<void> {
    if (events.length === 0) return;
    const followupIds = events.filter((e) => e.type === 'followup' && typeof e.data.followup_id === 'string').map((e) => e.data.followup_id as string);
    const artifacts = events
      .filter((e) => e.type === 'artifact' && typeof e.data.artifact_type === 'string')
      .map((e) => {
        const data = e.data.data && typeof e.data.data === 'object' ? { ...(e.data.data as Record<string, unknown>) } : {};
        data.artifact_uid ??= `art_${ulid()}`;
        return { artifact_type: e.data.artifact_type, created_at: new Date().toISOString(), data };
      });
    const sequence = await this.#db.transaction(async (tx) => {
      const seq = await appendRunEvents(tx, runId, executionId, toNewEvents(events));
      if (followupIds.length) await this.#consume(tx, runId, executionId, followupIds);
      if (artifacts.length) {
        await tx.query(`UPDATE runs SET artifacts = artifacts || $2::jsonb, updated_at = ay_now() WHERE id = $1`, [runId, JSON.stringify(artifacts)]);
      }
      return seq;
    });
    if (sequence !== undefined) await this.#bus.publish(RUN_EVENTS_TOPIC, { run_id: runId, sequence });
  }

  /** Extends the leases of live executions; answers, per execution, whether it should go on. */
  async heartbeat(executionIds: readonly string[], leaseMs: number): Promise<LiveCheck[]> {
    if (executionIds.length === 0) return [];
    const res = await this.#db.query<{ id: string; ended: boolean; state: string | null; current: string | null }>(
      `WITH beat AS (
         UPDATE executions SET heartbeat_at = ay_now(), lease_expires_at = ay_now() + $2 * interval '1 millisecond'
         WHERE id = ANY($1::text[]) AND ended_at IS NULL RETURNING id, run_id
       )
       SELECT e.id, (b.id IS NULL) AS ended, r.state, r.execution_id AS current
       FROM executions e LEFT JOIN beat b ON b.id = e.id LEFT JOIN runs r ON r.id = e.run_id
       WHERE e.id = ANY($1::text[])`,
      [executionIds, leaseMs],
    );
    return this.#verdicts(executionIds, res.rows);
  }

  /** Whether executions should go on (read only: for the frequent cancellation poll). */
  async check(executionIds: readonly string[]): Promise<LiveCheck[]> {
    if (executionIds.length === 0) return [];
    const res = await this.#db.query<{ id: string; ended: boolean; state: string | null; current: string | null }>(
      `SELECT e.id, (e.ended_at IS NOT NULL) AS ended, r.state, r.execution_id AS current
       FROM executions e LEFT JOIN runs r ON r.id = e.run_id WHERE e.id = ANY($1::text[])`,
      [executionIds],
    );
    return this.#verdicts(executionIds, res.rows);
  }

  #verdicts(ids: readonly string[], rows: { id: string; ended: boolean; state: string | null; current: string | null }[]): LiveCheck[] {
    const byId = new Map(rows.map((r) => [r.id, r]));
    return ids.map((executionId) => {
      const row = byId.get(executionId);
      if (!row || row.ended || row.current !== executionId) return { executionId, verdict: 'lost' };
      if (row.state === 'CANCELLED') return { executionId, verdict: 'cancelled' };
      if (row.state !== 'CLAIMED' && row.state !== 'INPROGRESS') return { executionId, verdict: 'lost' };
      return { executionId, verdict: 'live' };
    });
  }

  /** Gives a claimed run that never started back to the queue (at capacity, shutting down). */
  async release(executionId: string, runId: string, message: string): Promise<void> {
    const released = await this.#db.transaction(async (tx) => {
      const ended = await tx.query(`UPDATE executions SET ended_at = ay_now(), outcome = 'released' WHERE id = $1 AND ended_at IS NULL RETURNING id`, [executionId]);
      if (ended.rowCount === 0) return undefined;
      return applyRunEvent(tx, runId, 'release', { executionId, statusMessage: { message } });
    });
    if (released) await this.#bus.publish(RUNS_QUEUED_TOPIC, { run_id: runId, worker_host: released.worker_host });
  }

  /**
   * Records the end of an execution and moves its run to the state the outcome says (unless the run moved
   * on: cancelled, or taken over). A follow-up that arrived while it ran and was not delivered queues the
   * run again for a new execution.
   */
  async finished(input: { executionId: string; runId: string; outcome: ExecutionOutcome; usage?: Readonly<Record<string, number>> }): Promise<RunRow | undefined> {
    const { outcome } = input;
    const result = await this.#db.transaction(async (tx) => {
      const ended = await tx.query(
        `UPDATE executions SET ended_at = ay_now(), outcome = $2, exit_code = $3,
           agent_session_id = coalesce($4, agent_session_id), workspace = coalesce($5, workspace)
         WHERE id = $1 AND ended_at IS NULL RETURNING id`,
        [input.executionId, outcome.kind, outcome.exitCode, outcome.agentSessionId ?? null, outcome.workspace ?? null],
      );
      if (ended.rowCount === 0) return { run: undefined, requeued: undefined };
      const event = OUTCOME_EVENT[outcome.kind];
      if (!event) return { run: undefined, requeued: undefined };
      const statusMessage = { message: outcome.message, ...(outcome.errorCode ? { error_code: outcome.errorCode } : {}) };
      const run = await applyRunEvent(tx, input.runId, event, { executionId: input.executionId, statusMessage });
      if (!run) return { run: undefined, requeued: undefined };
      const usage = input.usage;
      if (usage && (usage.input_tokens || usage.output_tokens || usage.cost_usd)) {
        const total: Record<string, number> = { ...(run.request_usage ?? {}) };
        const add = (key: string, v: number | undefined) => {
          if (v) total[key] = (total[key] ?? 0) + v;
        };
        add('input_tokens', usage.input_tokens);
        add('output_tokens', usage.output_tokens);
        add('total_tokens', (usage.input_tokens ?? 0) + (usage.output_tokens ?? 0));
        add('inference_cost_usd', usage.cost_usd);
        add('inference_cost', usage.cost_usd);
        await tx.query('UPDATE runs SET request_usage = $2 WHERE id = $1', [input.runId, JSON.stringify(total)]);
      }
      const waiting = await tx.query('SELECT 1 FROM run_followups WHERE run_id = $1 AND consumed_by_execution IS NULL LIMIT 1', [input.runId]);
      const requeued = waiting.rowCount > 0 ? await applyRunEvent(tx, input.runId, 'continue', { statusMessage: null }) : undefined;
      return { run: requeued ?? run, requeued };
    });
    if (result.run) await this.#bus.publish(RUN_CHANGED_TOPIC, { run_id: input.runId, state: result.run.state });
    if (result.requeued) await this.#bus.publish(RUNS_QUEUED_TOPIC, { run_id: input.runId, worker_host: result.requeued.worker_host });
    if (!result.run) this.#log.debug({ runId: input.runId, executionId: input.executionId, outcome: outcome.kind }, 'execution ended; the run had moved on');
    return result.run;
  }
}
