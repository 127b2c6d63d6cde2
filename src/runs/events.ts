/**
 * The events of a run: state changes (written by a trigger on every state change), and what its executions
 * report (agent messages, tool calls and results, usage, the agent's session id, follow-ups delivered...).
 * Each run numbers its events 1, 2, 3... without gaps and in commit order: a writer takes the next numbers
 * under the run's row lock, so a reader that has seen event n never later finds an event below n.
 */
import type { Queryable } from '../kernel/db.ts';

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
    return value.length > MAX_EVENT_TEXT
      ? `${value.slice(0, MAX_EVENT_TEXT)}… [${value.length - MAX_EVENT_TEXT} characters cut]`
      : value;
  }
  if (depth > 8) return '[nested too deeply]';
  if (Array.isArray(value)) return value.slice(0, 1000).map((v) => clip(v, depth + 1));
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, clip(v, depth + 1)]),
    );
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

/**
 * Appends events to several runs in one statement (executors write the events of many executions at once).
 * Answers the sequence of each run's last event written.
 */
export async function appendEventsOfRuns(
  q: Queryable,
  batches: readonly { runId: string; executionId: string | null; events: readonly NewRunEvent[] }[],
): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  const rows: { runId: string; ord: number; executionId: string | null; e: NewRunEvent }[] = [];
  for (const b of batches) {
    for (const e of b.events) {
      const ord = (counts.get(b.runId) ?? 0) + 1;
      counts.set(b.runId, ord);
      rows.push({ runId: b.runId, ord, executionId: b.executionId, e });
    }
  }
  if (rows.length === 0) return new Map();
  // runs locked in id order, so two batches never wait on each other in a circle
  const runIds = [...counts.keys()].sort();
  const res = await q.query<{ run_id: string; last: number }>(
    `WITH wanted AS (
       SELECT w.run_id, w.n FROM unnest($1::text[], $2::int[]) AS w(run_id, n)
     ), locked AS (
       SELECT r.id FROM runs r JOIN wanted w ON w.run_id = r.id ORDER BY r.id FOR UPDATE OF r
     ), bumped AS (
       UPDATE runs r SET event_seq = r.event_seq + w.n FROM wanted w, locked l
       WHERE r.id = w.run_id AND l.id = r.id RETURNING r.id, r.event_seq, w.n
     ), written AS (
       INSERT INTO run_events (run_id, sequence, execution_id, type, data, occurred_at)
       SELECT e.run_id, b.event_seq - b.n + e.ord, e.execution_id, e.type, e.data, coalesce(e.occurred_at, ay_now())
       FROM unnest($3::text[], $4::int[], $5::text[], $6::text[], $7::jsonb[], $8::timestamptz[])
         AS e(run_id, ord, execution_id, type, data, occurred_at)
       JOIN bumped b ON b.id = e.run_id
       RETURNING 1
     )
     SELECT b.id AS run_id, b.event_seq AS last FROM bumped b`,
    [
      runIds,
      runIds.map((id) => counts.get(id)!),
      rows.map((r) => r.runId),
      rows.map((r) => r.ord),
      rows.map((r) => r.executionId),
      rows.map((r) => r.e.type),
      rows.map((r) => JSON.stringify(clip(r.e.data))),
      rows.map((r) => r.e.occurredAt ?? null),
    ],
  );
  return new Map(res.rows.map((r) => [r.run_id, Number(r.last)]));
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
export async function listEventsOfRuns(
  q: Queryable,
  runIds: readonly string[],
  after: number,
  limit: number,
): Promise<StoredRunEvent[]> {
  const res = await q.query<StoredRunEvent>(
    `SELECT run_id, sequence, execution_id, type, data, occurred_at FROM run_events
     WHERE run_id = ANY($1::text[]) AND sequence > $2 ORDER BY occurred_at, run_id, sequence LIMIT $3`,
    [runIds, after, limit],
  );
  return res.rows.map((r) => ({ ...r, sequence: Number(r.sequence) }));
}
