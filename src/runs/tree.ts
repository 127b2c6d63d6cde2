/**
 * The run-state writes of a factory's team of agents, in one place (docs/orchestration.md): where a child run
 * stands in its tree and what the limits allow, a run ending BLOCKED on the question it asked, a follow-up that
 * resumes a run (from a chat thread, once per provider message), and a cancel that reaches a run's descendants.
 * Every state change here goes through the state machine's transitions; the execution queue's own writes stay
 * in execution/.
 */
import { announceRunChanges } from '../engine/announce.ts';
import type { Bus } from '../kernel/bus.ts';
import type { Queryable } from '../kernel/db.ts';
import { newId } from '../kernel/ids.ts';
import type { NewRunEvent } from '../engine/events.ts';
import type { RunRow } from '../engine/model.ts';
import * as sql from './sql.ts';
import type { DispatchFacts, QuestionRow } from './sql.ts';
import { isTerminal } from '../engine/state-machine.ts';
import * as engine from '../engine/engine.ts';

export type { QuestionRow } from './sql.ts';

export interface TreeLimits {
  /** How deep a tree may grow: the root is depth 0, so 4 allows four levels of children below it. */
  maxDepth: number;
  /** Children one run may start over its lifetime. */
  maxChildren: number;
  /** Active runs (QUEUED … INPROGRESS) of one factory at once. */
  maxActivePerFactory: number;
  /** How long a tree may live, from its root's creation: no child starts or runs after it. */
  maxTreeMinutes: number;
}

export const DEFAULT_TREE_LIMITS: TreeLimits = {
  maxDepth: 4,
  maxChildren: 25,
  maxActivePerFactory: 100,
  maxTreeMinutes: 24 * 60,
};

/** Where a run stands in its tree. */
export interface TreePosition {
  runId: string;
  rootId: string;
  /** 0 for a root. */
  depth: number;
  /** The run first, its root last. */
  ancestors: string[];
}

export async function treePosition(q: Queryable, runId: string): Promise<TreePosition> {
  const up = await sql.runAncestors(q, runId);
  const last = up.at(-1);
  return { runId, rootId: last?.id ?? runId, depth: last?.depth ?? 0, ancestors: up.map((r) => r.id) };
}

/** Whether `runId` is `root` or one of its descendants. */
export async function inTree(q: Queryable, root: string, runId: string): Promise<boolean> {
  const up = await sql.runAncestors(q, runId);
  return up.some((r) => r.id === root);
}

/** The deadline of the tree whose root was created at `rootCreated`. */
export function treeDeadline(rootCreated: Date, limits: TreeLimits): Date {
  return new Date(rootCreated.getTime() + limits.maxTreeMinutes * 60_000);
}

/**
 * Why a run may not start a child now, as a sentence naming the limit; undefined when it may. `parentId` is the
 * run that dispatches (null: a person's dispatch through an API key, which starts a root). One statement.
 */
export async function dispatchRefusal(
  q: Queryable,
  input: { parentId: string | null; factoryId: string; now: Date },
  limits: TreeLimits,
): Promise<string | undefined> {
  return refusalOf(await sql.dispatchFacts(q, input.parentId, input.factoryId), input, limits);
}

/** `dispatchRefusal` for facts already read (with the caller's run token: `liveRunTokenForDispatch`). */
export function refusalOf(
  facts: DispatchFacts,
  input: { parentId: string | null; now: Date },
  limits: TreeLimits,
): string | undefined {
  if (facts.active >= limits.maxActivePerFactory)
    return `the factory has ${facts.active} active runs, its limit (AGENTYARD_FACTORY_MAX_ACTIVE_RUNS ${limits.maxActivePerFactory})`;
  const parentId = input.parentId;
  if (!parentId) return undefined;
  if (facts.depth + 1 > limits.maxDepth)
    return `run ${parentId} is at depth ${facts.depth} of its tree; a child would pass the depth limit of ${limits.maxDepth} (AGENTYARD_RUN_TREE_MAX_DEPTH)`;
  if (facts.children >= limits.maxChildren)
    return `run ${parentId} has started ${facts.children} children, its limit (AGENTYARD_RUN_MAX_CHILDREN ${limits.maxChildren})`;
  if (facts.root_created_at) {
    const deadline = treeDeadline(new Date(facts.root_created_at), limits);
    if (input.now >= deadline)
      return `the run tree of ${facts.root_id} passed its deadline at ${deadline.toISOString()} (AGENTYARD_RUN_TREE_MAX_MINUTES ${limits.maxTreeMinutes})`;
  }
  return undefined;
}

/** Records the question an execution asked: when it ends as it should, its run ends BLOCKED with it. */
export async function recordQuestion(
  q: Queryable,
  input: { runId: string; executionId: string; teamId: string; question: string; postedTo: Record<string, string> },
): Promise<string> {
  const id = newId('qst');
  await sql.insertQuestion(q, {
    id,
    run_id: input.runId,
    execution_id: input.executionId,
    team_id: input.teamId,
    question: input.question,
    posted_to: input.postedTo,
  });
  return id;
}

/** The question each of these executions asked, if any (their ends move their runs to BLOCKED). */
export async function questionsOf(q: Queryable, executionIds: readonly string[]): Promise<Map<string, QuestionRow>> {
  if (executionIds.length === 0) return new Map();
  const rows = await sql.questionsOfExecutions(q, executionIds);
  return new Map(rows.map((r) => [r.execution_id, r]));
}

/** The status message of a run BLOCKED on a question. */
export function blockedMessage(question: string): { message: string; error_code?: string } {
  const text = question.trim();
  return { message: text.length > 500 ? `${text.slice(0, 499)}…` : text };
}

export interface Resumed {
  followupId: string;
  run: RunRow;
  /** The follow-up queued the finished (or BLOCKED) run again. */
  requeued: boolean;
}

/**
 * A follow-up to a run, in the caller's transaction (a chat thread's delivery evaluated in the outbox): a
 * finished or BLOCKED run is queued again. With `providerMessageKey`, the same message recorded before answers
 * undefined and changes nothing. The caller calls `announceResumed` after its commit.
 */
export async function resumeWithFollowup(
  tx: Queryable,
  input: { teamId: string; runId: string; message: string; creatorId: string | null; providerMessageKey?: string },
): Promise<Resumed | undefined> {
  const current = await sql.getRun(tx, input.teamId, input.runId);
  if (!current) return undefined;
  const inserted = await sql.insertFollowupOnce(tx, {
    id: newId('fu'),
    runId: input.runId,
    teamId: input.teamId,
    message: input.message,
    creatorId: input.creatorId,
    providerMessageKey: input.providerMessageKey ?? null,
  });
  if (!inserted) return undefined;
  if (isTerminal(current.state)) {
    const requeued = await engine.applyRunEvent(tx, input.runId, 'continue', {
      teamId: input.teamId,
      statusMessage: null,
    });
    return { followupId: inserted.id, run: requeued ?? current, requeued: requeued !== undefined };
  }
  await engine.touchRun(tx, input.runId);
  return { followupId: inserted.id, run: current, requeued: false };
}

/** Records events the factory interface writes (reports, questions, replies, skills read) in a run's log. */
export async function recordEvents(
  q: Queryable,
  runId: string,
  executionId: string | null,
  events: readonly NewRunEvent[],
): Promise<void> {
  await engine.appendRunEvents(q, runId, executionId, events);
}

/** Tells the executors of follow-ups committed by `resumeWithFollowup`. */
export async function announceResumed(bus: Bus, resumed: readonly Resumed[]): Promise<void> {
  await announceRunChanges(
    bus,
    resumed.map((r) => ({
      id: r.run.id,
      worker_host: r.run.worker_host,
      followupId: r.followupId,
      ...(r.requeued ? { state: r.run.state } : {}),
    })),
  );
}

/** Cancels every active descendant of a run (a cancel reaches the whole subtree); answers the runs it cancelled. */
export async function cancelDescendants(q: Queryable, bus: Bus, runId: string, reason: string): Promise<string[]> {
  const below = await sql.runDescendants(q, runId);
  const cancelled = await engine.cancelRuns(
    q,
    below.filter((r) => !isTerminal(r.state)).map((r) => r.id),
    reason,
  );
  await announceRunChanges(bus, cancelled);
  return cancelled.map((r) => r.id);
}

/** Links a chat thread to a run, so that a later message there continues it. */
export async function linkThread(
  q: Queryable,
  link: { connectionId: string; threadKey: string; runId: string; teamId: string; provider: string },
): Promise<void> {
  await sql.insertThread(q, link);
}

/** The runs a thread continues, the most recently linked first. */
export function runsOfThread(
  q: Queryable,
  connectionId: string,
  threadKey: string,
): Promise<{ id: string; team_id: string; state: RunRow['state']; agent_session: string | null }[]> {
  return sql.runsOfThread(q, connectionId, threadKey);
}

/** The team's runs waiting for someone, with their question. */
export function blockedRuns(q: Queryable, teamId: string, limit = 20) {
  return sql.blockedRuns(q, teamId, limit);
}

/** Cancels the runs whose tree passed its deadline (a child cannot outlive its root's); answers them. */
export async function cancelOverdue(q: Queryable, bus: Bus, limits: TreeLimits, now: Date): Promise<string[]> {
  const cutoff = new Date(now.getTime() - limits.maxTreeMinutes * 60_000);
  const overdue = await sql.overdueTreeRuns(q, cutoff);
  const cancelled = await engine.cancelRuns(
    q,
    overdue,
    `Cancelled: its run tree passed its deadline (AGENTYARD_RUN_TREE_MAX_MINUTES ${limits.maxTreeMinutes})`,
  );
  await announceRunChanges(bus, cancelled);
  return cancelled.map((r) => r.id);
}

/** The reports of `childIds` still waiting for `runId`, handed over (consumed) by its execution `executionId`. */
export function takeReports(q: Queryable, runId: string, childIds: readonly string[], executionId: string) {
  return sql.consumeReports(q, runId, childIds, executionId);
}
