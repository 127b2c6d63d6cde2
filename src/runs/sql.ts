import type { Queryable } from '../kernel/db.ts';
import type { ArtifactFile } from './artifact-files.ts';
import type { ExecutionSummary } from './conversation.ts';
import type { StoredRunEvent } from '../engine/events.ts';
import type { ActsAs, RunRow } from '../engine/model.ts';

/** The member who linked the account a CREATOR run acts as (integrations' identities), if any. */
export async function actsAsSubject(q: Queryable, teamId: string, actsAs: ActsAs): Promise<string | undefined> {
  const res = await q.query<{ subject_id: string }>(
    `SELECT subject_id FROM integration_identities WHERE team_id = $1 AND provider = $2 AND lower(external_id) = lower($3)`,
    [teamId, actsAs.provider, actsAs.account ?? ''],
  );
  return res.rows[0]?.subject_id;
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

// ---- events (src/engine/events.ts numbers them) ----

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

/** The text of a run's last `result` event: the agent's final answer; null before it gave one. */
export async function runResult(q: Queryable, runId: string): Promise<string | null> {
  const res = await q.query<{ text: string | null }>(
    `SELECT data->>'text' AS text FROM run_events WHERE run_id = $1 AND type = 'result' ORDER BY sequence DESC LIMIT 1`,
    [runId],
  );
  return res.rows[0]?.text ?? null;
}
