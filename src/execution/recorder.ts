/**
 * What the server records about executions, wherever they run (its own executors or a self-hosted worker):
 * the start, the events, heartbeats, and the end, each a compare-and-set guarded by the execution still being
 * the run's current one, so an executor that lost its lease changes nothing. Starts, events and ends of many
 * executions are written in batches (one statement or transaction per batch, see Batcher).
 *
 * Lock order, everywhere: executions before runs (the reaper does the same), runs in id order within a
 * statement where several are locked.
 */
import { RUN_EVENTS_TOPIC } from '../kernel/topics.ts';
import { AssignmentError } from './assignment-builder.ts';
import type { Logger } from '../kernel/log.ts';
import { recordArtifact } from '../runs/artifact-files.ts';
import { insertArtifactFiles } from '../runs/sql.ts';
import type { ArtifactFile, RecordedArtifact } from '../runs/artifact-files.ts';
import type { NewRunEvent } from '../engine/events.ts';
import type { RunRow } from '../engine/model.ts';
import { transitionFor } from '../engine/state-machine.ts';
import type { RunEvent } from '../engine/state-machine.ts';
import { blockedMessage, questionsOf } from '../runs/tree.ts';
import type { QuestionRow } from '../runs/tree.ts';
import type { Bus } from '../kernel/bus.ts';
import type { Db } from '../kernel/db.ts';
import { Batcher } from '../kernel/group-commit.ts';
import { retryOnConflict } from '../store/errors.ts';
import { runFromJson } from './queue.ts';
import * as sql from './sql.ts';
import type { AgentEvent, ExecutionOutcome } from './assignment.ts';
import { appendEventsOfRuns } from '../engine/engine.ts';
import { applyRunEvent } from '../engine/engine.ts';
import * as engine from '../engine/engine.ts';
import { announceRunChanges } from '../engine/announce.ts';

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

export interface EventsInput {
  runId: string;
  executionId: string;
  events: readonly AgentEvent[];
}

export interface FinishInput {
  executionId: string;
  runId: string;
  outcome: ExecutionOutcome;
  usage?: Readonly<Record<string, number>>;
}

function toNewEvents(events: readonly AgentEvent[]): NewRunEvent[] {
  return events.map((e) => {
    const at = e.at ? new Date(e.at) : undefined;
    return {
      type: e.type,
      data: e.type === 'artifact' ? withoutContent(e.data) : e.data,
      ...(at && !Number.isNaN(at.getTime()) ? { occurredAt: at } : {}),
    };
  });
}

/** An artifact event as it is logged: a file's bytes are kept in run_artifact_files, not in the event. */
function withoutContent(data: Record<string, unknown>): Record<string, unknown> {
  const inner = data.data;
  if (!inner || typeof inner !== 'object' || !('content_base64' in inner)) return data;
  const { content_base64: _content, ...rest } = inner as Record<string, unknown>;
  return { ...data, data: rest };
}

function artifactsOf(
  runId: string,
  events: readonly AgentEvent[],
  log: Logger,
): { items: RecordedArtifact[]; files: ArtifactFile[] } {
  const items: RecordedArtifact[] = [];
  const files: ArtifactFile[] = [];
  for (const e of events) {
    if (e.type !== 'artifact') continue;
    const recorded = recordArtifact(e.data, runId);
    if (!recorded) continue;
    items.push(recorded.item);
    if (recorded.file) files.push(recorded.file);
    if (recorded.problem) log.warn({ run_id: runId }, recorded.problem);
  }
  return { items, files };
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

export class ExecutionRecorder {
  readonly #db: Db;
  readonly #bus: Bus;
  readonly #log: Logger;
  // A group gathers the calls of one turn, so that what an answer hands over (an event, an end) joins the next.
  readonly #starts = new Batcher<StartInput, boolean>((items) => retryOnConflict(() => this.#writeStarts(items)), {
    gather: 'microtasks',
  });
  readonly #events = new Batcher<EventsInput, void>((items) => retryOnConflict(() => this.#writeEvents(items)), {
    gather: 'microtasks',
  });
  readonly #ends = new Batcher<FinishInput, RunRow | undefined>(
    (items) => retryOnConflict(() => this.#writeEnds(items)),
    { gather: 'microtasks' },
  );

  constructor(db: Db, bus: Bus, log: Logger) {
    this.#db = db;
    this.#bus = bus;
    this.#log = log;
  }

  async #announce(runIds: readonly string[]): Promise<void> {
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
    const res = await engine.ayStartExecutions(this.#db, {
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
    await this.#announce([...moved]);
    return items.map((i) => moved.has(i.runId));
  }

  /** Stores events in order; follow-ups they report delivered are consumed, artifacts are added to the run. */
  events(runId: string, executionId: string, events: readonly AgentEvent[]): Promise<void> {
    if (events.length === 0) return Promise.resolve();
    return this.#events.add({ runId, executionId, events });
  }

  async #writeEvents(items: EventsInput[]): Promise<void[]> {
    const batches = items.map((i) => ({ runId: i.runId, executionId: i.executionId, events: toNewEvents(i.events) }));
    const followups = items.flatMap((i) =>
      i.events
        .filter((e) => e.type === 'followup' && typeof e.data.followup_id === 'string')
        .map((e) => [e.data.followup_id as string, i.executionId] as const),
    );
    const artifacts = items
      .map((i) => [i.runId, artifactsOf(i.runId, i.events, this.#log)] as const)
      .filter(([, a]) => a.items.length > 0);
    // Events alone are one statement, atomic without a transaction: one round trip instead of three (BEGIN and
    // COMMIT), which on PGlite also frees its single connection sooner for the next run's start.
    const runs =
      followups.length === 0 && artifacts.length === 0
        ? [...(await appendEventsOfRuns(this.#db, batches)).keys()]
        : await this.#db.transaction(async (tx) => {
            const last = await appendEventsOfRuns(tx, batches);
            if (followups.length) await sql.consumeFollowups(tx, followups);
            for (const [runId, a] of artifacts) {
              await engine.appendRunArtifacts(tx, runId, JSON.stringify(a.items));
              await insertArtifactFiles(tx, runId, a.files);
            }
            return [...last.keys()];
          });
    await this.#announce(runs);
    return items.map(() => undefined);
  }

  /** Extends the leases of live executions; answers, per execution, whether it should go on. */
  async heartbeat(executionIds: readonly string[], leaseMs: number): Promise<LiveCheck[]> {
    if (executionIds.length === 0) return [];
    const res = await engine.heartbeatExecutions(this.#db, executionIds, leaseMs);
    return this.#verdicts(executionIds, res.rows);
  }

  /** Whether executions should go on (read only: for the frequent cancellation poll). */
  async check(executionIds: readonly string[]): Promise<LiveCheck[]> {
    if (executionIds.length === 0) return [];
    const res = await engine.checkExecutions(this.#db, executionIds);
    return this.#verdicts(executionIds, res.rows);
  }

  #verdicts(ids: readonly string[], rows: engine.LiveRow[]): LiveCheck[] {
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
      const ended = await engine.releaseExecution(tx, executionId);
      if (ended.rowCount === 0) return undefined;
      return applyRunEvent(tx, runId, 'release', { executionId, statusMessage: { message } });
    });
    if (released) await announceRunChanges(this.#bus, [released]);
  }

  /**
   * Ends an execution whose assignment could not be built: the run fails with an AssignmentError's own code and
   * message, or ends in ERROR as an environment set-up failure (logged, as it is not the run's fault).
   */
  async unassigned(ids: { executionId: string; runId: string }, error: Error): Promise<void> {
    const known = error instanceof AssignmentError;
    if (!known) this.#log.error({ err: error, runId: ids.runId }, 'building the execution assignment failed');
    await this.finished({
      ...ids,
      outcome: known
        ? { kind: 'failed', exitCode: null, message: error.message, errorCode: error.errorCode }
        : {
            kind: 'error',
            exitCode: null,
            message: 'the execution could not be prepared',
            errorCode: 'environment_setup_failed',
          },
    });
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
    // An execution that asked a question (ask_user) and ended well ends its run BLOCKED on it (runs/tree.ts).
    const succeeded = items.filter((i) => i.outcome.kind === 'succeeded').map((i) => i.executionId);
    const questions = succeeded.length ? await questionsOf(this.#db, succeeded) : new Map<string, QuestionRow>();
    const eventOf = (i: FinishInput) =>
      i.outcome.kind === 'succeeded' && questions.has(i.executionId)
        ? 'block'
        : (OUTCOME_EVENT[i.outcome.kind] ?? null);
    const messageOf = (i: FinishInput) => {
      const question = i.outcome.kind === 'succeeded' ? questions.get(i.executionId) : undefined;
      if (question) return JSON.stringify(blockedMessage(question.question));
      return JSON.stringify({
        message: i.outcome.message,
        ...(i.outcome.errorCode ? { error_code: i.outcome.errorCode } : {}),
      });
    };
    const res = await engine.ayEndExecutions(this.#db, {
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
    await this.#announce([...rows.keys()]);
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
