import type { WireMessages } from '../kernel/bus.ts';
import type { Queryable, SqlValue } from '../kernel/db.ts';
import type { ArtifactFile } from './artifact-files.ts';
import type { ExecutionSummary } from './conversation.ts';
import { clip } from './events.ts';
import type { NewRunEvent, StoredRunEvent } from './events.ts';
import type { ActsAs, AgentConfig, RunRow, RunSource } from './model.ts';
import type { RunEvent, RunState } from './state-machine.ts';
import { transitionFor } from './state-machine.ts';

export interface InsertRun {
  id: string;
  teamId: string;
  title: string;
  prompt: string;
  state: RunState;
  source: RunSource;
  config: AgentConfig;
  workerHost: string | null;
  creator: { id: string; type: string; displayName: string; email: string | null } | null;
  /** Who the run executes as, when not the creator. */
  executor?: { id: string; type: string; displayName: string } | null;
  factoryId: string | null;
  automationId: string | null;
  deliveryId: string | null;
  scheduleId: string | null;
  parentRunId: string | null;
  conversationId: string | null;
  sessionId: string;
  metadata: Record<string, string>;
}

/** The columns a new run is inserted with, and their types (the record type of the JSON batch). */
const INSERT_COLUMNS: readonly [string, string][] = [
  ['id', 'text'],
  ['team_id', 'text'],
  ['title', 'text'],
  ['prompt', 'text'],
  ['state', 'text'],
  ['source', 'text'],
  ['config', 'jsonb'],
  ['config_name', 'text'],
  ['model_id', 'text'],
  ['environment_id', 'text'],
  ['skill_spec', 'text'],
  ['worker_host', 'text'],
  ['creator_id', 'text'],
  ['creator_type', 'text'],
  ['creator_name', 'text'],
  ['creator_email', 'text'],
  ['factory_id', 'text'],
  ['automation_id', 'text'],
  ['delivery_id', 'text'],
  ['schedule_id', 'text'],
  ['parent_run_id', 'text'],
  ['conversation_id', 'text'],
  ['session_id', 'text'],
  ['metadata', 'jsonb'],
  ['executor_id', 'text'],
  ['executor_type', 'text'],
  ['executor_name', 'text'],
];
const COLUMN_LIST = INSERT_COLUMNS.map(([name]) => name).join(', ');
const RECORD_TYPE = INSERT_COLUMNS.map(([name, type]) => `${name} ${type}`).join(', ');
/** Inserts the records of insertRunsParameter ($1). */
const INSERT_RUNS = `INSERT INTO runs (${COLUMN_LIST}) SELECT ${COLUMN_LIST} FROM json_to_recordset($1::json) AS r(${RECORD_TYPE})`;

function insertRecord(r: InsertRun): Record<string, unknown> {
  // Stored only when someone other than the creator executes the run (migration 0004).
  const executor = r.executor && r.executor.id !== r.creator?.id ? r.executor : null;
  return {
    id: r.id,
    team_id: r.teamId,
    title: r.title,
    prompt: r.prompt,
    state: r.state,
    source: r.source,
    config: r.config,
    config_name: r.config.name ?? null,
    model_id: r.config.model_id ?? null,
    environment_id: r.config.environment_id ?? null,
    skill_spec: r.config.skill_spec ?? null,
    worker_host: r.workerHost,
    creator_id: r.creator?.id ?? null,
    creator_type: r.creator?.type ?? null,
    creator_name: r.creator?.displayName ?? null,
    creator_email: r.creator?.email ?? null,
    factory_id: r.factoryId,
    automation_id: r.automationId,
    delivery_id: r.deliveryId,
    schedule_id: r.scheduleId,
    parent_run_id: r.parentRunId,
    conversation_id: r.conversationId,
    session_id: r.sessionId,
    metadata: r.metadata,
    executor_id: executor?.id ?? null,
    executor_type: executor?.type ?? null,
    executor_name: executor?.displayName ?? null,
  };
}

/** The member who linked the account a CREATOR run acts as (integrations' identities), if any. */
export async function actsAsSubject(q: Queryable, teamId: string, actsAs: ActsAs): Promise<string | undefined> {
  const res = await q.query<{ subject_id: string }>(
    `SELECT subject_id FROM integration_identities WHERE team_id = $1 AND provider = $2 AND lower(external_id) = lower($3)`,
    [teamId, actsAs.provider, actsAs.account ?? ''],
  );
  return res.rows[0]?.subject_id;
}

/** Whom a CREATOR run acts as (RunService sets it in the transaction that inserts the run). */
export async function setRunActsAs(q: Queryable, runId: string, actsAs: ActsAs): Promise<RunRow> {
  const res = await q.query<RunRow>('UPDATE runs SET acts_as = $2 WHERE id = $1 RETURNING *', [
    runId,
    JSON.stringify(actsAs),
  ]);
  return res.rows[0]!;
}

export async function insertRun(q: Queryable, r: InsertRun): Promise<RunRow> {
  const res = await q.query<RunRow>(`${INSERT_RUNS} RETURNING *`, [insertRunsParameter([r])]);
  return res.rows[0]!;
}

/** What a new run's creator needs back: reading every column back costs more than the insert on PGlite. */
export type CreatedRun = Pick<RunRow, 'id' | 'state' | 'worker_host'>;

/**
 * The rows of a run insert as its one JSON parameter: on PGlite, binding 27 parameters per run cost more than the
 * insert itself. Unpacked by json_to_recordset, which reads the text as it goes (jsonb_to_recordset first builds a
 * jsonb value of the whole batch, slower per row: docs/decisions.md).
 */
export function insertRunsParameter(runs: readonly InsertRun[]): string {
  return JSON.stringify(runs.map(insertRecord));
}

/**
 * Several runs in one statement (all or none). A creator needs back only what it sent (id, state, worker
 * host), so nothing is read back: on PGlite, parsing RETURNING rows cost about a tenth of the insert.
 * `notify`: NOTIFYs sent by the same statement, so only if the runs commit, and without a round trip of their own.
 */
export async function insertRuns(
  q: Queryable,
  runs: readonly InsertRun[],
  notify?: WireMessages,
): Promise<CreatedRun[]> {
  let inserted: number | null;
  if (notify && notify.payloads.length > 0) {
    const res = await q.query<{ inserted: number }>(
      `WITH inserted AS (${INSERT_RUNS} RETURNING 1)
       SELECT (SELECT count(*) FROM inserted)::int AS inserted, (SELECT count(pg_notify($2, p)) FROM unnest($3::text[]) AS p) AS notified`,
      [insertRunsParameter(runs), notify.channel, notify.payloads],
    );
    inserted = res.rows[0]?.inserted ?? null;
  } else {
    inserted = (await q.query(INSERT_RUNS, [insertRunsParameter(runs)])).rowCount;
  }
  if (inserted !== runs.length) throw new Error(`inserted ${inserted} of ${runs.length} runs`);
  return runs.map((r) => ({ id: r.id, state: r.state, worker_host: r.workerHost }));
}

export async function insertAttachment(
  q: Queryable,
  runId: string,
  a: { fileName: string; mimeType: string; data: Buffer },
): Promise<void> {
  await q.query(
    `INSERT INTO run_attachments (run_id, file_name, mime_type, data) VALUES ($1, $2, $3, $4)
     ON CONFLICT (run_id, file_name) DO UPDATE SET mime_type = excluded.mime_type, data = excluded.data`,
    [runId, a.fileName, a.mimeType, a.data],
  );
}

export async function listAttachments(
  q: Queryable,
  runId: string,
): Promise<{ file_name: string; mime_type: string; data: Buffer }[]> {
  const res = await q.query<{ file_name: string; mime_type: string; data: Uint8Array }>(
    'SELECT file_name, mime_type, data FROM run_attachments WHERE run_id = $1 ORDER BY file_name',
    [runId],
  );
  return res.rows.map((r) => ({ ...r, data: Buffer.from(r.data) }));
}

export async function listAttachmentMeta(
  q: Queryable,
  runId: string,
): Promise<{ file_name: string; mime_type: string; size_bytes: number }[]> {
  const res = await q.query<{ file_name: string; mime_type: string; size_bytes: number }>(
    'SELECT file_name, mime_type, octet_length(data)::int AS size_bytes FROM run_attachments WHERE run_id = $1 ORDER BY file_name',
    [runId],
  );
  return res.rows;
}

/** One attachment of a run of the team. */
export async function getAttachment(
  q: Queryable,
  teamId: string,
  runId: string,
  fileName: string,
): Promise<{ file_name: string; mime_type: string; data: Buffer } | undefined> {
  const res = await q.query<{ file_name: string; mime_type: string; data: Uint8Array }>(
    `SELECT a.file_name, a.mime_type, a.data FROM run_attachments a JOIN runs r ON r.id = a.run_id
     WHERE r.team_id = $1 AND a.run_id = $2 AND a.file_name = $3`,
    [teamId, runId, fileName],
  );
  const row = res.rows[0];
  return row ? { ...row, data: Buffer.from(row.data) } : undefined;
}

export async function getRun(q: Queryable, teamId: string, id: string): Promise<RunRow | undefined> {
  return (await q.query<RunRow>('SELECT * FROM runs WHERE team_id = $1 AND id = $2', [teamId, id])).rows[0];
}

/** Whether the team has a conversation of this id: a run whose id it is, or one that continues it. */
export async function conversationExists(q: Queryable, teamId: string, id: string): Promise<boolean> {
  const res = await q.query('SELECT 1 FROM runs WHERE team_id = $1 AND (id = $2 OR conversation_id = $2) LIMIT 1', [
    teamId,
    id,
  ]);
  return res.rows.length > 0;
}

export async function getRunById(q: Queryable, id: string): Promise<RunRow | undefined> {
  return (await q.query<RunRow>('SELECT * FROM runs WHERE id = $1', [id])).rows[0];
}

/** The runs of a conversation, oldest first: the run whose id it is and those that continue it (at most 100). */
export async function listConversationRuns(q: Queryable, teamId: string, conversationId: string): Promise<RunRow[]> {
  const res = await q.query<RunRow>(
    'SELECT * FROM runs WHERE team_id = $1 AND (id = $2 OR conversation_id = $2) ORDER BY created_at, id LIMIT 100',
    [teamId, conversationId],
  );
  return res.rows;
}

export async function getRunBySession(q: Queryable, sessionId: string): Promise<RunRow | undefined> {
  return (await q.query<RunRow>('SELECT * FROM runs WHERE session_id = $1', [sessionId])).rows[0];
}

/**
 * Moves a run by a state-machine event as a compare-and-set on its current state. Answers the updated row,
 * or undefined when the run was not in a state the event applies to.
 */
export async function applyRunEvent(
  q: Queryable,
  id: string,
  event: RunEvent,
  extra: {
    statusMessage?: RunRow['status_message'];
    teamId?: string;
    /**
     * `claim`: the execution that becomes the run's current one. Any other event: applies only while this is
     * still the run's current execution (an executor whose lease was taken over changes nothing).
     */
    executionId?: string;
  } = {},
): Promise<RunRow | undefined> {
  const t = transitionFor(event);
  const params: SqlValue[] = [id, t.to, [...t.from]];
  let sets = 'state = $2, updated_at = ay_now()';
  if (extra.executionId !== undefined && event === 'claim') {
    params.push(extra.executionId);
    sets += `, execution_id = $${params.length}`;
  }
  if (event === 'start') sets += ', started_at = coalesce(started_at, ay_now())';
  if (['succeed', 'fail', 'error', 'block', 'cancel'].includes(event)) sets += ', finished_at = ay_now()';
  if (event === 'continue') sets += ', finished_at = NULL';
  if (extra.statusMessage !== undefined) {
    params.push(extra.statusMessage === null ? null : JSON.stringify(extra.statusMessage));
    sets += `, status_message = $${params.length}`;
  }
  let where = 'id = $1 AND state = ANY($3)';
  if (extra.teamId) {
    params.push(extra.teamId);
    where += ` AND team_id = $${params.length}`;
  }
  if (extra.executionId !== undefined && event !== 'claim') {
    params.push(extra.executionId);
    where += ` AND execution_id = $${params.length}`;
  }
  const res = await q.query<RunRow>(`UPDATE runs SET ${sets} WHERE ${where} RETURNING *`, params);
  return res.rows[0];
}

export async function insertFollowup(
  q: Queryable,
  f: { id: string; runId: string; teamId: string; message: string; mode: string; creatorId: string | null },
): Promise<{ id: string; created_at: Date }> {
  const res = await q.query<{ id: string; created_at: Date }>(
    `INSERT INTO run_followups (id, run_id, team_id, message, mode, creator_id) VALUES ($1, $2, $3, $4, $5, $6)
     RETURNING id, created_at`,
    [f.id, f.runId, f.teamId, f.message, f.mode, f.creatorId],
  );
  return res.rows[0]!;
}

export interface FollowupRow {
  id: string;
  run_id: string;
  message: string;
  mode: string;
  creator_id: string | null;
  created_at: Date;
  consumed_by_execution: string | null;
  consumed_at: Date | null;
}

export async function listFollowups(q: Queryable, runId: string): Promise<FollowupRow[]> {
  return (await q.query<FollowupRow>('SELECT * FROM run_followups WHERE run_id = $1 ORDER BY created_at, id', [runId]))
    .rows;
}

export async function findIdempotencyKey(
  q: Queryable,
  teamId: string,
  key: string,
): Promise<{ request_hash: string; run_id: string; created_at: Date } | undefined> {
  const res = await q.query<{ request_hash: string; run_id: string; created_at: Date }>(
    `SELECT request_hash, run_id, created_at FROM run_idempotency_keys
     WHERE team_id = $1 AND key = $2 AND created_at > now() - interval '24 hours'`,
    [teamId, key],
  );
  return res.rows[0];
}

/** Records the key for a new run; answers false when another request holds the key already. */
export async function claimIdempotencyKey(
  q: Queryable,
  teamId: string,
  key: string,
  requestHash: string,
  runId: string,
): Promise<boolean> {
  await q.query(
    `DELETE FROM run_idempotency_keys WHERE team_id = $1 AND key = $2 AND created_at <= now() - interval '24 hours'`,
    [teamId, key],
  );
  const res = await q.query(
    `INSERT INTO run_idempotency_keys (team_id, key, request_hash, run_id) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
    [teamId, key, requestHash, runId],
  );
  return res.rowCount > 0;
}

export interface ArtifactRow {
  artifact: { artifact_type?: string; created_at?: string; data?: Record<string, unknown> };
  run_id: string;
}

/** The artifact of a team's run whose `data.artifact_uid` is `uid`. */
export async function findArtifact(q: Queryable, teamId: string, uid: string): Promise<ArtifactRow | undefined> {
  const res = await q.query<ArtifactRow>(
    `SELECT a AS artifact, r.id AS run_id FROM runs r, jsonb_array_elements(r.artifacts) a
     WHERE r.team_id = $1 AND r.artifacts <> '[]'::jsonb AND r.artifacts @> jsonb_build_array(jsonb_build_object('data', jsonb_build_object('artifact_uid', $2::text)))
       AND a->'data'->>'artifact_uid' = $2
     LIMIT 1`,
    [teamId, uid],
  );
  return res.rows[0];
}

export interface FactoryAgentsRow {
  id: string;
  name: string;
  source: Record<string, unknown>;
  definition: { agents?: unknown[] } | null;
}

export async function listFactoryDefinitions(
  q: Queryable,
  teamId: string,
): Promise<(FactoryAgentsRow & { updated_at: Date })[]> {
  const res = await q.query<FactoryAgentsRow & { updated_at: Date }>(
    `SELECT id, name, source, definition, updated_at FROM factories
     WHERE team_id = $1 AND deleted_at IS NULL AND definition IS NOT NULL ORDER BY name, id`,
    [teamId],
  );
  return res.rows;
}

export async function lastRunByConfigName(q: Queryable, teamId: string, names: string[]): Promise<Map<string, Date>> {
  if (names.length === 0) return new Map();
  const res = await q.query<{ config_name: string; last: Date }>(
    `SELECT config_name, max(created_at) AS last FROM runs WHERE team_id = $1 AND config_name = ANY($2::text[]) GROUP BY config_name`,
    [teamId, names],
  );
  return new Map(res.rows.map((r) => [r.config_name, r.last]));
}

/**
 * The newest run on each runner of the given factories: a run's runner is its `config.runner_id`, else the
 * runner its agent (`config.name`) executes on (as runnerImages in src/execution/sql.ts resolves it).
 */
export async function lastRunsByRunner(q: Queryable, teamId: string, factoryIds: string[]): Promise<LastRunOnRunner[]> {
  if (factoryIds.length === 0) return [];
  const res = await q.query<LastRunOnRunner>(
    `SELECT DISTINCT ON (x.factory_id, x.runner) x.* FROM (
       SELECT r.factory_id, coalesce(r.config->>'runner_id',
                (SELECT a->'execution'->>'runner' FROM jsonb_array_elements(coalesce(f.definition->'agents', '[]'::jsonb)) a
                 WHERE a->>'name' = r.config->>'name' LIMIT 1)) AS runner,
              r.id, r.title, r.state, r.created_at, r.updated_at, r.started_at,
              coalesce(r.status_message->>'error_code' = 'environment_setup_failed', false) AS setup_failed
       FROM runs r JOIN factories f ON f.id = r.factory_id
       WHERE r.team_id = $1 AND r.factory_id = ANY($2::text[])) x
     WHERE x.runner IS NOT NULL
     ORDER BY x.factory_id, x.runner, x.created_at DESC, x.id DESC`,
    [teamId, factoryIds],
  );
  return res.rows;
}

export interface LastRunOnRunner {
  factory_id: string;
  runner: string;
  id: string;
  title: string;
  state: string;
  created_at: Date;
  updated_at: Date;
  started_at: Date | null;
  setup_failed: boolean;
}

/** The id of the team's conversation `id` names (a run id or a conversation id); undefined when none. */
export async function conversationOf(q: Queryable, teamId: string, id: string): Promise<string | undefined> {
  const res = await q.query<{ conversation: string }>(
    `SELECT coalesce(conversation_id, id) AS conversation FROM runs
     WHERE team_id = $1 AND (id = $2 OR conversation_id = $2) ORDER BY created_at, id LIMIT 1`,
    [teamId, id],
  );
  return res.rows[0]?.conversation;
}

/** Seconds each run spent executing: the sum over its executions of start → end (→ now while one runs). */
export async function executionSeconds(q: Queryable, runIds: readonly string[]): Promise<Map<string, number>> {
  if (runIds.length === 0) return new Map();
  const res = await q.query<{ run_id: string; seconds: number }>(
    `SELECT run_id, sum(extract(epoch FROM coalesce(ended_at, ay_now()) - started_at))::float8 AS seconds
     FROM executions WHERE run_id = ANY($1::text[]) AND started_at IS NOT NULL GROUP BY run_id`,
    [runIds],
  );
  return new Map(res.rows.map((r) => [r.run_id, Number(r.seconds)]));
}

// ---- events (src/runs/events.ts numbers them) ----

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

// ---- conversations ----

export async function loadExecutions(q: Queryable, runIds: readonly string[]): Promise<ExecutionSummary[]> {
  const res = await q.query<ExecutionSummary>(
    `SELECT id, run_id, attempt, harness, started_at, ended_at, claimed_at FROM executions WHERE run_id = ANY($1::text[]) ORDER BY run_id, attempt`,
    [runIds],
  );
  return res.rows;
}

export async function loadAllEvents(q: Queryable, runId: string): Promise<StoredRunEvent[]> {
  const res = await q.query<StoredRunEvent>(
    `SELECT run_id, sequence, execution_id, type, data, occurred_at FROM run_events WHERE run_id = $1 ORDER BY sequence`,
    [runId],
  );
  return res.rows.map((r) => ({ ...r, sequence: Number(r.sequence) }));
}

// ---- artifact files ----

export async function insertArtifactFiles(q: Queryable, runId: string, files: readonly ArtifactFile[]): Promise<void> {
  if (files.length === 0) return;
  await q.query(
    `INSERT INTO run_artifact_files (artifact_uid, run_id, mime_type, data)
     SELECT x.uid, $1, x.mime, decode(x.b64, 'base64') FROM unnest($2::text[], $3::text[], $4::text[]) AS x(uid, mime, b64)
     ON CONFLICT (artifact_uid) DO NOTHING`,
    [runId, files.map((f) => f.artifactUid), files.map((f) => f.mimeType), files.map((f) => f.data.toString('base64'))],
  );
}

export async function getArtifactFile(
  q: Queryable,
  artifactUid: string,
): Promise<{ mime_type: string; data: Buffer } | undefined> {
  const res = await q.query<{ mime_type: string; data: Uint8Array }>(
    'SELECT mime_type, data FROM run_artifact_files WHERE artifact_uid = $1',
    [artifactUid],
  );
  const row = res.rows[0];
  return row ? { mime_type: row.mime_type, data: Buffer.from(row.data) } : undefined;
}

/** Whether the run ever had an execution. */
export async function runHasExecuted(q: Queryable, runId: string): Promise<boolean> {
  const executed = await q.query('SELECT 1 FROM executions WHERE run_id = $1 LIMIT 1', [runId]);
  return executed.rowCount > 0;
}

/** Of `runIds`, those of the team. */
export async function ownRunIds(q: Queryable, teamId: string, runIds: readonly string[]): Promise<string[]> {
  const own = await q.query<{ id: string }>('SELECT id FROM runs WHERE team_id = $1 AND id = ANY($2::text[])', [
    teamId,
    runIds,
  ]);
  return own.rows.map((r) => r.id);
}

/** Marks a run updated now (a change beside its row: a follow-up). */
export async function touchRun(q: Queryable, runId: string): Promise<void> {
  await q.query('UPDATE runs SET updated_at = ay_now() WHERE id = $1', [runId]);
}

// ── The run tree, questions and chat threads (runs/tree.ts) ──────────────────────────────────────────────

/** A run and its ancestors, the run first (`depth` 0) and its root last. */
export async function runAncestors(q: Queryable, runId: string): Promise<{ id: string; depth: number }[]> {
  const res = await q.query<{ id: string; depth: number }>(
    `WITH RECURSIVE up AS (
       SELECT id, parent_run_id, 0 AS depth FROM runs WHERE id = $1
       UNION ALL
       SELECT r.id, r.parent_run_id, up.depth + 1 FROM runs r JOIN up ON r.id = up.parent_run_id WHERE up.depth < 64
     ) SELECT id, depth FROM up ORDER BY depth`,
    [runId],
  );
  return res.rows.map((r) => ({ id: r.id, depth: Number(r.depth) }));
}

/** The runs under `runId` (not itself), with their depth below it. */
export async function runDescendants(
  q: Queryable,
  runId: string,
): Promise<{ id: string; parent_run_id: string; state: RunState; depth: number }[]> {
  const res = await q.query<{ id: string; parent_run_id: string; state: RunState; depth: number }>(
    `WITH RECURSIVE down AS (
       SELECT id, parent_run_id, state, 1 AS depth FROM runs WHERE parent_run_id = $1
       UNION ALL
       SELECT r.id, r.parent_run_id, r.state, down.depth + 1 FROM runs r JOIN down ON r.parent_run_id = down.id
        WHERE down.depth < 64
     ) SELECT id, parent_run_id, state, depth FROM down ORDER BY depth, id`,
    [runId],
  );
  return res.rows.map((r) => ({ ...r, depth: Number(r.depth) }));
}

/** What a dispatch is checked against, in one statement: the parent's depth, root and children, the factory's active runs. */
export async function dispatchFacts(
  q: Queryable,
  parentId: string | null,
  factoryId: string,
): Promise<{ depth: number; root_id: string | null; root_created_at: Date | null; children: number; active: number }> {
  const res = await q.query<{
    depth: number | null;
    root_id: string | null;
    root_created_at: Date | null;
    children: number;
    active: number;
  }>(
    `WITH RECURSIVE up AS (
       SELECT id, parent_run_id, created_at, 0 AS depth FROM runs WHERE id = $1
       UNION ALL
       SELECT r.id, r.parent_run_id, r.created_at, up.depth + 1 FROM runs r JOIN up ON r.id = up.parent_run_id
        WHERE up.depth < 64
     ), top AS (SELECT id, created_at, depth FROM up ORDER BY depth DESC LIMIT 1)
     SELECT (SELECT depth FROM top) AS depth, (SELECT id FROM top) AS root_id,
            (SELECT created_at FROM top) AS root_created_at,
            CASE WHEN $1::text IS NULL THEN 0 ELSE (SELECT count(*) FROM runs WHERE parent_run_id = $1)::int END AS children,
            (SELECT count(*) FROM runs WHERE factory_id = $2
               AND state IN ('QUEUED', 'PENDING', 'CLAIMED', 'INPROGRESS'))::int AS active`,
    [parentId, factoryId],
  );
  const row = res.rows[0]!;
  return {
    depth: Number(row.depth ?? 0),
    root_id: row.root_id,
    root_created_at: row.root_created_at,
    children: Number(row.children),
    active: Number(row.active),
  };
}

export async function countChildren(q: Queryable, runId: string): Promise<number> {
  const res = await q.query<{ n: number }>('SELECT count(*)::int AS n FROM runs WHERE parent_run_id = $1', [runId]);
  return Number(res.rows[0]?.n ?? 0);
}

export async function countActiveFactoryRuns(q: Queryable, factoryId: string): Promise<number> {
  const res = await q.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM runs WHERE factory_id = $1 AND state IN ('QUEUED', 'PENDING', 'CLAIMED', 'INPROGRESS')`,
    [factoryId],
  );
  return Number(res.rows[0]?.n ?? 0);
}

/** Cancels the runs among `ids` that may be cancelled; answers those it moved. */
export async function cancelRuns(
  q: Queryable,
  ids: readonly string[],
  message: string,
): Promise<{ id: string; state: RunState }[]> {
  if (ids.length === 0) return [];
  const t = transitionFor('cancel');
  const res = await q.query<{ id: string; state: RunState }>(
    `UPDATE runs SET state = $2, updated_at = ay_now(), finished_at = ay_now(), status_message = $4::jsonb
      WHERE id = ANY($1::text[]) AND state = ANY($3::text[]) RETURNING id, state`,
    [ids as string[], t.to, [...t.from], JSON.stringify({ message })],
  );
  return res.rows;
}

export interface QuestionRow {
  id: string;
  run_id: string;
  execution_id: string;
  team_id: string;
  question: string;
  posted_to: Record<string, string>;
  asked_at: Date;
}

export async function insertQuestion(
  q: Queryable,
  row: Omit<QuestionRow, 'asked_at' | 'posted_to'> & { posted_to: Record<string, string> },
): Promise<void> {
  await q.query(
    `INSERT INTO run_questions (id, run_id, execution_id, team_id, question, posted_to) VALUES ($1, $2, $3, $4, $5, $6)`,
    [row.id, row.run_id, row.execution_id, row.team_id, row.question, JSON.stringify(row.posted_to)],
  );
}

/** The last question each of these executions asked. */
export async function questionsOfExecutions(q: Queryable, executionIds: readonly string[]): Promise<QuestionRow[]> {
  const res = await q.query<QuestionRow>(
    `SELECT DISTINCT ON (execution_id) * FROM run_questions WHERE execution_id = ANY($1::text[])
      ORDER BY execution_id, asked_at DESC`,
    [executionIds as string[]],
  );
  return res.rows;
}

/** The team's BLOCKED runs with the last question each asked, newest first. */
export async function blockedRuns(
  q: Queryable,
  teamId: string,
  limit: number,
): Promise<(QuestionRow & { title: string; updated_at: Date })[]> {
  const res = await q.query<QuestionRow & { title: string; updated_at: Date }>(
    `SELECT r.title, r.updated_at, qn.* FROM runs r
       JOIN LATERAL (SELECT * FROM run_questions x WHERE x.run_id = r.id ORDER BY x.asked_at DESC LIMIT 1) qn ON true
      WHERE r.team_id = $1 AND r.state = 'BLOCKED' ORDER BY r.updated_at DESC LIMIT $2`,
    [teamId, limit],
  );
  return res.rows;
}

export async function insertThread(
  q: Queryable,
  t: { connectionId: string; threadKey: string; runId: string; teamId: string; provider: string },
): Promise<void> {
  await q.query(
    `INSERT INTO run_threads (connection_id, thread_key, run_id, team_id, provider) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT DO NOTHING`,
    [t.connectionId, t.threadKey, t.runId, t.teamId, t.provider],
  );
}

/** The runs a thread continues, the most recently linked first. */
export async function runsOfThread(
  q: Queryable,
  connectionId: string,
  threadKey: string,
): Promise<{ id: string; team_id: string; state: RunState; agent_session: string | null }[]> {
  const res = await q.query<{ id: string; team_id: string; state: RunState; agent_session: string | null }>(
    `SELECT r.id, r.team_id, r.state, r.metadata->>'linear_agent_session_id' AS agent_session
       FROM run_threads t JOIN runs r ON r.id = t.run_id
      WHERE t.connection_id = $1 AND t.thread_key = $2 ORDER BY t.created_at DESC, r.created_at DESC LIMIT 20`,
    [connectionId, threadKey],
  );
  return res.rows;
}

/** A follow-up recorded once per provider message (`providerMessageKey`); undefined when it was recorded before. */
export async function insertFollowupOnce(
  q: Queryable,
  f: {
    id: string;
    runId: string;
    teamId: string;
    message: string;
    creatorId: string | null;
    providerMessageKey: string | null;
  },
): Promise<{ id: string } | undefined> {
  const res = await q.query<{ id: string }>(
    `INSERT INTO run_followups (id, run_id, team_id, message, mode, creator_id, provider_message_key)
     VALUES ($1, $2, $3, $4, 'normal', $5, $6) ON CONFLICT DO NOTHING RETURNING id`,
    [f.id, f.runId, f.teamId, f.message, f.creatorId, f.providerMessageKey],
  );
  return res.rows[0];
}

/** The text of a run's last `result` event. */
export async function lastResultText(q: Queryable, runId: string): Promise<string | undefined> {
  const res = await q.query<{ text: string | null }>(
    `SELECT data->>'text' AS text FROM run_events WHERE run_id = $1 AND type = 'result' ORDER BY sequence DESC LIMIT 1`,
    [runId],
  );
  return res.rows[0]?.text ?? undefined;
}

/** The reports of `childIds` waiting for `runId` (follow-ups keyed `report:<child>:…`), consumed by `executionId`. */
export async function consumeReports(
  q: Queryable,
  runId: string,
  childIds: readonly string[],
  executionId: string,
): Promise<{ id: string; message: string; provider_message_key: string }[]> {
  if (childIds.length === 0) return [];
  const res = await q.query<{ id: string; message: string; provider_message_key: string }>(
    `UPDATE run_followups SET consumed_by_execution = $3, consumed_at = ay_now()
      WHERE run_id = $1 AND consumed_at IS NULL AND provider_message_key LIKE ANY($2::text[])
      RETURNING id, message, provider_message_key`,
    [runId, childIds.map((c) => `report:${c}:%`), executionId],
  );
  return res.rows;
}

/** Active runs below a root created before `cutoff` (their tree passed its deadline). */
export async function overdueTreeRuns(q: Queryable, cutoff: Date): Promise<string[]> {
  const res = await q.query<{ run_id: string }>(
    `WITH RECURSIVE up AS (
       SELECT id AS run_id, parent_run_id, 0 AS depth FROM runs
        WHERE parent_run_id IS NOT NULL AND state IN ('QUEUED', 'PENDING', 'CLAIMED', 'INPROGRESS')
       UNION ALL
       SELECT up.run_id, r.parent_run_id, up.depth + 1 FROM up JOIN runs r ON r.id = up.parent_run_id
        WHERE r.parent_run_id IS NOT NULL AND up.depth < 64
     )
     SELECT DISTINCT up.run_id FROM up JOIN runs root ON root.id = up.parent_run_id
      WHERE root.parent_run_id IS NULL AND root.created_at < $1`,
    [cutoff],
  );
  return res.rows.map((r) => r.run_id);
}

/** The state of each of the team's runs among `ids`. */
export async function runStates(
  q: Queryable,
  teamId: string,
  ids: readonly string[],
): Promise<{ id: string; state: RunState; status_message: RunRow['status_message'] }[]> {
  const res = await q.query<{ id: string; state: RunState; status_message: RunRow['status_message'] }>(
    'SELECT id, state, status_message FROM runs WHERE team_id = $1 AND id = ANY($2::text[])',
    [teamId, ids as string[]],
  );
  return res.rows;
}

/** The text of a run's last `result` event: the agent's final answer; null before it gave one. */
export async function runResult(q: Queryable, runId: string): Promise<string | null> {
  const res = await q.query<{ text: string | null }>(
    `SELECT data->>'text' AS text FROM run_events WHERE run_id = $1 AND type = 'result' ORDER BY sequence DESC LIMIT 1`,
    [runId],
  );
  return res.rows[0]?.text ?? null;
}
