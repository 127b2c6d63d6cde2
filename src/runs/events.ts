/**
 * The events of a run: state changes (written by a trigger on every state change), and what its executions
 * report (agent messages, tool calls and results, usage, the agent's session id, follow-ups delivered...).
 * Each run numbers its events 1, 2, 3... without gaps and in commit order: a writer takes the next numbers
 * under the run's row lock, so a reader that has seen event n never later finds an event below n.
 */
import type { Queryable } from '../store/db.ts';

export const RUN_EVENTS_TOPIC = 'runs.events';

export type RunEventType =
  | 'state'
  | 'status'
  | 'message'
  | 'tool_call'
  | 'tool_result'
  | 'usage'
  | 'result'
  | 'session'
  | 'skill'
  | 'followup'
  | 'log'
  | 'error'
  | 'artifact';

export const RUN_EVENT_TYPES: readonly RunEventType[] = [
  'state',
  'status',
  'message',
  'tool_call',
  'tool_result',
  'usage',
  'result',
  'session',
  'skill',
  'followup',
  'log',
  'error',
  'artifact',
];

/** What an execution reports; `data` is documented per type in docs/execution.md. */
export interface NewRunEvent {
  type: RunEventType;
  data: Record<string, unknown>;
  /** Defaults to the time of writing. */
  occurredAt?: Date;
}

export interface StoredRunEvent {
  run_id: string;
  sequence: number;
  execution_id: string | null;
  type: RunEventType;
  data: Record<string, unknown>;
  occurred_at: Date;
}

/** Longest text kept in one event member; longer text is cut and marked. */
export const MAX_EVENT_TEXT = 64 * 1024;

function clip(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') {
    return value.length > MAX_EVENT_TEXT ? `${value.slice(0, MAX_EVENT_TEXT)}… [${value.length - MAX_EVENT_TEXT} characters cut]` : value;
  }
  if (depth > 8) return '[nested too deeply]';
  if (Array.isArray(value)) return value.slice(0, 1000).map((v) => clip(v, depth + 1));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, clip(v, depth + 1)]));
  }
  return value;
}

/**
 * Appends events to a run (in the caller's transaction when given one). Answers the sequence of the last
 * event written, or undefined when the run does not exist.
 */
export async function appendRunEvents(
  q: Queryable,
  runId: string,
  executionId: string | null,
  events: readonly NewRunEvent[],
): Promise<number | undefined> {
  if (events.length === 0) return undefined;
  const bumped = await q.query<{ event_seq: number }>(
    'UPDATE runs SET event_seq = event_seq + $2 WHERE id = $1 RETURNING event_seq',
    [runId, events.length],
  );
  const last = bumped.rows[0]?.event_seq;
  if (last === undefined) return undefined;
  const first = Number(last) - events.length + 1;
  await q.query(
    `INSERT INTO run_events (run_id, sequence, execution_id, type, data, occurred_at)
     SELECT $1, $2::bigint + e.ord - 1, $3, e.type, e.data, coalesce(e.occurred_at, ay_now())
     FROM unnest($4::text[], $5::jsonb[], $6::timestamptz[]) WITH ORDINALITY AS e(type, data, occurred_at, ord)`,
    [
      runId,
      first,
      executionId,
      events.map((e) => e.type),
      events.map((e) => JSON.stringify(clip(e.data))),
      events.map((e) => e.occurredAt ?? null),
    ],
  );
  return Number(last);
}

/** The run's events after `after` (a sequence), oldest first. */
export async function listRunEvents(q: Queryable, runId: string, after = 0, limit = 500): Promise<StoredRunEvent[]> {
  const res = await q.query<StoredRunEvent>(
    `SELECT run_id, sequence, execution_id, type, data, occurred_at FROM run_events
     WHERE run_id = $1 AND sequence > $2 ORDER BY sequence LIMIT $3`,
    [runId, after, limit],
  );
  return res.rows.map((r) => ({ ...r, sequence: Number(r.sequence) }));
}

/** Events of several runs after `after` (per run), ordered by run then sequence (`GET /agent/events`). */
export async function listEventsOfRuns(q: Queryable, runIds: readonly string[], after: number, limit: number): Promise<StoredRunEvent[]> {
  const res = await q.query<StoredRunEvent>(
    `SELECT run_id, sequence, execution_id, type, data, occurred_at FROM run_events
     WHERE run_id = ANY($1::text[]) AND sequence > $2 ORDER BY occurred_at, run_id, sequence LIMIT $3`,
    [runIds, after, limit],
  );
  return res.rows.map((r) => ({ ...r, sequence: Number(r.sequence) }));
}
