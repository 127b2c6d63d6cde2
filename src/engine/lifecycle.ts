/**
 * The life of an execution as the run engine writes it, wherever it runs (the server's executors, a self-hosted
 * worker, a Kubernetes Job): the start, heartbeats (the lease), a release, and the end, each a compare-and-set
 * guarded by the execution still being the run's current one, so an executor that lost its lease changes
 * nothing. Starts and ends of many executions are written in batches (one statement per batch, see Batcher).
 * Each step is told after its commit: `runs.events` (streams), `runs.changed` and `runs.queued` for a run queued
 * again, and `runs.lifecycle` in this process. The agent runtime's recorder (execution/recorder.ts) adds the
 * agent's events to this.
 *
 * Lock order, everywhere: executions before runs (the reaper does the same), runs in id order within a
 * statement where several are locked.
 */
import type { Bus } from '../kernel/bus.ts';
import type { Db, Queryable } from '../kernel/db.ts';
import { Batcher } from '../kernel/group-commit.ts';
import type { Logger } from '../kernel/log.ts';
import { retryOnConflict } from '../store/errors.ts';
import { EXECUTIONS_ENDED_TOPIC, RUN_EVENTS_TOPIC } from '../kernel/topics.ts';
import { announceRunChanges, emitStates } from './announce.ts';
import { runFromJson } from './claim.ts';
import type { RunRow } from './model.ts';
import * as sql from './sql.ts';
import { transitionFor } from './state-machine.ts';
import type { RunEvent } from './state-machine.ts';

/** How an execution ended, as its executor reports it. */
export interface ExecutionOutcome {
  /** succeeded → SUCCEEDED, failed → FAILED (the agent or its task failed), error → ERROR (the platform failed). */
  kind: 'succeeded' | 'failed' | 'error' | 'cancelled' | 'lost';
  exitCode: number | null;
  message: string;
  errorCode?: string;
  agentSessionId?: string;
  workspace?: string;
}

/**
 * The status messages of executions that ended well but left a question for a person (keyed by execution id):
 * their runs end BLOCKED on it. Given by the Run API's side (runs/tree.ts), which owns the questions.
 */
export type BlockedLookup = (
  q: Queryable,
  executionIds: readonly string[],
) => Promise<Map<string, { message: string; error_code?: string }>>;

/** The state-machine event an outcome applies to its run (none: the run is left as it is). */
const OUTCOME_EVENT: Partial<Record<ExecutionOutcome['kind'], RunEvent>> = {
  succeeded: 'succeed',
  failed: 'fail',
  error: 'error',
};

/** Run ids per bus message (a NOTIFY payload stays under 8000 bytes). */
const IDS_PER_MESSAGE = 150;

export interface LiveCheck {
  executionId: string;
  /** stop: the run was cancelled, or the execution lost its lease or is no longer the run's. */
  verdict: 'live' | 'cancelled' | 'lost';
}

export interface StartInput {
  executionId: string;
  runId: string;
  workspace: string;
  leaseMs: number;
  followupIds: readonly string[];
  where: string;
  /** `LOCAL`: executed by this host's executors (the run's `execution_location`); absent: left as it is. */
  location?: 'LOCAL';
}

export interface FinishInput {
  executionId: string;
  runId: string;
  outcome: ExecutionOutcome;
  usage?: Readonly<Record<string, number>>;
}

/** What an execution's usage adds to its run's `request_usage` (keys summed by ay_end_executions); undefined: nothing. */
function usageToAdd(usage: Readonly<Record<string, number>> | undefined): Record<string, number> | undefined {
  if (!usage || !(usage.input_tokens || usage.output_tokens || usage.cost_usd)) return undefined;
  const add: Record<string, number> = {};
  const put = (key: string, v: number | undefined) => {
    if (v) add[key] = v;
  };
  put('input_tokens', usage.input_tokens);
  put('output_tokens', usage.output_tokens);
  put('total_tokens', (usage.input_tokens ?? 0) + (usage.output_tokens ?? 0));
  put('inference_cost_usd', usage.cost_usd);
  put('inference_cost', usage.cost_usd);
  return add;
}

/** The state machine's transitions an end applies (ay_end_executions takes them rather than knowing them). */
const END_TRANSITIONS = JSON.stringify(
  Object.fromEntries(
    [...new Set(Object.values(OUTCOME_EVENT)), 'block' as const, 'continue' as const].map((e) => [e, transitionFor(e)]),
  ),
);

export class RunLifecycle {
  readonly #db: Db;
  readonly #bus: Bus;
  readonly #log: Logger;
  readonly #blocked: BlockedLookup | undefined;
  // A group gathers the calls of one turn, so that what an answer hands over (an event, an end) joins the next.
  readonly #starts = new Batcher<StartInput, boolean>((items) => retryOnConflict(() => this.#writeStarts(items)), {
    gather: 'microtasks',
  });
  readonly #ends = new Batcher<FinishInput, RunRow | undefined>(
    (items) => retryOnConflict(() => this.#writeEnds(items)),
    { gather: 'microtasks' },
  );

  constructor(db: Db, bus: Bus, log: Logger, blocked?: BlockedLookup) {
    this.#db = db;
    this.#bus = bus;
    this.#log = log;
    this.#blocked = blocked;
  }

  /** Tells the streams that runs have new events (their state events among them). */
  async announceEvents(runIds: readonly string[]): Promise<void> {
    for (let i = 0; i < runIds.length; i += IDS_PER_MESSAGE) {
      await this.#bus.publish(RUN_EVENTS_TOPIC, { run_ids: runIds.slice(i, i + IDS_PER_MESSAGE) });
    }
  }

  /**
   * The agent is starting: CLAIMED → INPROGRESS, the follow-ups in its prompt consumed. False (nothing
   * written) when the execution lost its lease or the run left CLAIMED (cancelled meanwhile).
   */
  started(input: StartInput): Promise<boolean> {
    return this.#starts.add(input);
  }

  async #writeStarts(items: StartInput[]): Promise<boolean[]> {
    // ay_start_executions (functions.sql): executions still holding their lease marked started, their runs
    // moved by the state machine's `start` transition, the follow-ups in their prompts consumed.
    const t = transitionFor('start');
    const followups = items.flatMap((i) => i.followupIds.map((f) => [f, i.executionId] as const));
    const res = await sql.ayStartExecutions(this.#db, {
      runIds: items.map((i) => i.runId),
      executionIds: items.map((i) => i.executionId),
      workspaces: items.map((i) => i.workspace),
      leases: items.map((i) => i.leaseMs),
      messages: items.map((i) => JSON.stringify({ message: `Running on ${i.where}` })),
      followupIds: followups.map((f) => f[0]),
      followupExecutions: followups.map((f) => f[1]),
      to: t.to,
      from: [...t.from],
      locations: items.map((i) => i.location ?? null),
    });
    const moved = new Set(res.rows.map((r) => r.run_id));
    emitStates(
      this.#bus,
      [...moved].map((id) => ({ id, state: t.to })),
    );
    await this.announceEvents([...moved]);
    return items.map((i) => moved.has(i.runId));
  }

  /**
   * `executions.ended` for ended executions: in this process for all; on the wire only for those whose run did not
   * move (cancelled, lost), as `runs.events` already told the other processes of the rest.
   */
  async #announceEnds(items: readonly FinishInput[], moved: ReadonlyMap<string, RunRow>): Promise<void> {
    const ids = (list: readonly FinishInput[]) => ({
      execution_ids: list.map((i) => i.executionId),
      run_ids: list.map((i) => i.runId),
    });
    const quiet = items.filter((i) => !moved.has(i.runId));
    const told = items.filter((i) => moved.has(i.runId));
    if (told.length > 0) this.#bus.emitLocal(EXECUTIONS_ENDED_TOPIC, ids(told));
    if (quiet.length > 0) await this.#bus.publish(EXECUTIONS_ENDED_TOPIC, ids(quiet)).catch(() => {});
  }

  /** Extends the leases of live executions; answers, per execution, whether it should go on. */
  async heartbeat(executionIds: readonly string[], leaseMs: number): Promise<LiveCheck[]> {
    if (executionIds.length === 0) return [];
    const res = await sql.heartbeatExecutions(this.#db, executionIds, leaseMs);
    return this.#verdicts(executionIds, res.rows);
  }

  /** Whether executions should go on (read only: for the frequent cancellation poll). */
  async check(executionIds: readonly string[]): Promise<LiveCheck[]> {
    if (executionIds.length === 0) return [];
    const res = await sql.checkExecutions(this.#db, executionIds);
    return this.#verdicts(executionIds, res.rows);
  }

  #verdicts(ids: readonly string[], rows: sql.LiveRow[]): LiveCheck[] {
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
      const ended = await sql.releaseExecution(tx, executionId);
      if (ended.rowCount === 0) return undefined;
      return sql.applyRunEvent(tx, runId, 'release', { executionId, statusMessage: { message } });
    });
    if (!released) return;
    await announceRunChanges(this.#bus, [released]);
    this.#bus.emitLocal(EXECUTIONS_ENDED_TOPIC, { execution_ids: [executionId], run_ids: [runId] });
  }

  /**
   * Records the end of an execution and moves its run to the state the outcome says (unless the run moved
   * on: cancelled, or taken over). A follow-up that arrived while it ran and was not delivered queues the
   * run again for a new execution. Answers the run as it is then, or undefined when the run had moved on.
   */
  finished(input: FinishInput): Promise<RunRow | undefined> {
    return this.#ends.add(input);
  }

  async #writeEnds(items: FinishInput[]): Promise<(RunRow | undefined)[]> {
    // ay_end_executions (functions.sql): the executions still holding their lease ended, their runs moved by
    // the state machine's transition for their outcome (guarded by the execution still being current), usage
    // added, runs with a follow-up left waiting queued again — one statement, no BEGIN/COMMIT around it.
    // An execution that asked a question (ask_user) and ended well ends its run BLOCKED on it (BlockedLookup).
    const succeeded = items.filter((i) => i.outcome.kind === 'succeeded').map((i) => i.executionId);
    const questions =
      succeeded.length && this.#blocked
        ? await this.#blocked(this.#db, succeeded)
        : new Map<string, { message: string; error_code?: string }>();
    const eventOf = (i: FinishInput) =>
      i.outcome.kind === 'succeeded' && questions.has(i.executionId)
        ? 'block'
        : (OUTCOME_EVENT[i.outcome.kind] ?? null);
    const messageOf = (i: FinishInput) => {
      const blocked = i.outcome.kind === 'succeeded' ? questions.get(i.executionId) : undefined;
      if (blocked) return JSON.stringify(blocked);
      return JSON.stringify({
        message: i.outcome.message,
        ...(i.outcome.errorCode ? { error_code: i.outcome.errorCode } : {}),
      });
    };
    const res = await sql.ayEndExecutions(this.#db, {
      executionIds: items.map((i) => i.executionId),
      runIds: items.map((i) => i.runId),
      outcomes: items.map((i) => i.outcome.kind),
      exitCodes: items.map((i) => i.outcome.exitCode),
      sessions: items.map((i) => i.outcome.agentSessionId ?? null),
      workspaces: items.map((i) => i.outcome.workspace ?? null),
      events: items.map(eventOf),
      messages: items.map(messageOf),
      usages: items.map((i) => {
        const usage = usageToAdd(i.usage);
        return usage ? JSON.stringify(usage) : null;
      }),
      transitions: END_TRANSITIONS,
    });
    const rows = new Map(res.rows.map((r) => [r.run.id as string, runFromJson(r.run)]));
    emitStates(
      this.#bus,
      [...rows.values()].filter((r) => !res.rows.some((x) => x.requeued && x.run.id === r.id)),
    );
    await this.announceEvents([...rows.keys()]);
    await this.#announceEnds(items, rows);
    const requeued = res.rows.flatMap((r) => (r.requeued ? [rows.get(r.run.id as string)!] : []));
    if (requeued.length > 0) await announceRunChanges(this.#bus, requeued);
    return items.map((i) => {
      const row = rows.get(i.runId);
      if (!row)
        this.#log.debug(
          { runId: i.runId, executionId: i.executionId, outcome: i.outcome.kind },
          'execution ended; the run had moved on',
        );
      return row;
    });
  }
}
