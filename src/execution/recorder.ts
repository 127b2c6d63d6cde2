/**
 * What the server records about executions, wherever they run (its own executors, a self-hosted worker, a
 * Kubernetes Job): the run engine's start, heartbeats, release and end (engine/lifecycle.ts), plus what the
 * agent reports: its events in order, the follow-ups it says it delivered, the artifacts it produced, and an
 * assignment that could not be built. Events of many executions are written in batches (see Batcher).
 */
import type { Bus } from '../kernel/bus.ts';
import type { Db } from '../kernel/db.ts';
import { Batcher } from '../kernel/group-commit.ts';
import type { Logger } from '../kernel/log.ts';
import type { NewRunEvent } from '../engine/events.ts';
import { RunLifecycle } from '../engine/lifecycle.ts';
import { appendEventsOfRuns, appendRunArtifacts } from '../engine/engine.ts';
import { recordArtifact } from '../runs/artifact-files.ts';
import type { ArtifactFile, RecordedArtifact } from '../runs/artifact-files.ts';
import { insertArtifactFiles } from '../runs/sql.ts';
import { blockedMessage, questionsOf } from '../runs/tree.ts';
import { retryOnConflict } from '../store/errors.ts';
import { AssignmentError } from './assignment-builder.ts';
import type { AgentEvent } from './assignment.ts';
import * as sql from './sql.ts';

export type { FinishInput, LiveCheck, StartInput } from '../engine/lifecycle.ts';

export interface EventsInput {
  runId: string;
  executionId: string;
  events: readonly AgentEvent[];
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

export class ExecutionRecorder extends RunLifecycle {
  readonly #db: Db;
  readonly #log: Logger;
  readonly #events = new Batcher<EventsInput, void>((items) => retryOnConflict(() => this.#writeEvents(items)), {
    gather: 'microtasks',
  });

  constructor(db: Db, bus: Bus, log: Logger) {
    // an execution that asked a question (ask_user) and ended well ends its run BLOCKED on it (runs/tree.ts)
    super(db, bus, log, async (q, executionIds) => {
      const questions = await questionsOf(q, executionIds);
      return new Map([...questions].map(([id, row]) => [id, blockedMessage(row.question)]));
    });
    this.#db = db;
    this.#log = log;
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
              await appendRunArtifacts(tx, runId, JSON.stringify(a.items));
              await insertArtifactFiles(tx, runId, a.files);
            }
            return [...last.keys()];
          });
    await this.announceEvents(runs);
    return items.map(() => undefined);
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
}
