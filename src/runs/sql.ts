import type { Queryable } from '../kernel/db.ts';
import type { ArtifactFile } from './artifact-files.ts';
import type { ExecutionSummary } from './conversation.ts';
import type { StoredRunEvent } from '../engine/events.ts';
import type { ActsAs, RunRow } from '../engine/model.ts';
import type { RunState } from '../engine/state-machine.ts';

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
 * runner its agent (`config.name`) executes on (as factoryRunSettings in src/execution/sql.ts resolves it).
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

/** One event of a run by its sequence (`GET /agent/runs/{id}/events/{sequence}`). */
export async function getRunEvent(q: Queryable, runId: string, sequence: number): Promise<StoredRunEvent | undefined> {
  const res = await q.query<StoredRunEvent>(
    `SELECT run_id, sequence, execution_id, type, data, occurred_at FROM run_events WHERE run_id = $1 AND sequence = $2`,
    [runId, sequence],
  );
  const row = res.rows[0];
  return row ? { ...row, sequence: Number(row.sequence) } : undefined;
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

/** What a dispatch is checked against: the parent's depth, root and children, the factory's active runs. */
export interface DispatchFacts {
  depth: number;
  root_id: string | null;
  root_created_at: Date | null;
  children: number;
  active: number;
}

/** What a dispatch is checked against, in one statement. */
export async function dispatchFacts(q: Queryable, parentId: string | null, factoryId: string): Promise<DispatchFacts> {
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

/** The daily caps written for a run's factory, agent and automation (the applied definition's `budget` keys). */
export interface DailyCapsRow {
  factory_name: string;
  factory_caps: Record<string, unknown> | null;
  agent: string | null;
  agent_caps: Record<string, unknown> | null;
  automation_name: string | null;
  automation_caps: Record<string, unknown> | null;
}

/**
 * The caps of a run's scopes from its factory's applied definition: factory.yaml's `budget`, the agent's and the
 * automation's resolved `budget`. The agent is the automation's (its `agent`, else the foreman) for an
 * automation's run, else the run configuration's `name`.
 */
export async function dailyCapsOf(
  q: Queryable,
  factoryId: string,
  configName: string | null,
  automationId: string | null,
): Promise<DailyCapsRow | undefined> {
  const res = await q.query<DailyCapsRow>(
    `WITH f AS (SELECT name, definition,
                       CASE WHEN jsonb_typeof(definition->'agents') = 'array' THEN definition->'agents' ELSE '[]'::jsonb END AS agents,
                       CASE WHEN jsonb_typeof(definition->'automations') = 'array' THEN definition->'automations' ELSE '[]'::jsonb END AS automations
                  FROM factories WHERE id = $1),
          a AS (SELECT name, agent FROM automations WHERE id = $3),
          who AS (SELECT CASE WHEN $3::text IS NULL THEN $2::text ELSE coalesce((SELECT agent FROM a), f.definition->>'foreman') END AS agent
                    FROM f)
     SELECT f.name AS factory_name, f.definition->'factory'->'budget' AS factory_caps, who.agent,
            (SELECT ag->'execution'->'budget' FROM jsonb_array_elements(f.agents) ag WHERE ag->>'name' = who.agent LIMIT 1) AS agent_caps,
            (SELECT name FROM a) AS automation_name,
            (SELECT au->'execution'->'budget' FROM jsonb_array_elements(f.automations) au
              WHERE au->>'name' = (SELECT name FROM a) LIMIT 1) AS automation_caps
       FROM f, who`,
    [factoryId, configName, automationId],
  );
  return res.rows[0];
}

/** What a factory's runs created since `since` (the UTC day's start) count and cost, in all and per scope. */
export interface DailyUsageRow {
  factory_runs: string;
  factory_cost: string;
  agent_runs: string;
  agent_cost: string;
  automation_runs: string;
  automation_cost: string;
  day_start: Date;
}

/**
 * Runs of the factory created this UTC day (by the database's clock), and the cost they reported, in all, of the
 * agent and of the automation. Reads the factory's runs of the day through runs_factory_created (migration 0089).
 */
export async function dailyUsageOf(
  q: Queryable,
  factoryId: string,
  agent: string | null,
  automationId: string | null,
): Promise<DailyUsageRow> {
  const res = await q.query<DailyUsageRow>(
    `WITH day AS (SELECT date_trunc('day', ay_now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS start),
          x AS (SELECT r.automation_id,
                       CASE WHEN r.automation_id IS NULL THEN r.config_name
                            ELSE coalesce(a.agent, (SELECT definition->>'foreman' FROM factories WHERE id = $1)) END AS agent,
                       CASE WHEN jsonb_typeof(r.request_usage->'inference_cost_usd') = 'number'
                            THEN (r.request_usage->>'inference_cost_usd')::numeric ELSE 0 END AS cost
                  FROM runs r LEFT JOIN automations a ON a.id = r.automation_id, day
                 WHERE r.factory_id = $1 AND r.created_at >= day.start)
     SELECT count(*) AS factory_runs, coalesce(sum(cost), 0) AS factory_cost,
            count(*) FILTER (WHERE agent = $2) AS agent_runs, coalesce(sum(cost) FILTER (WHERE agent = $2), 0) AS agent_cost,
            count(*) FILTER (WHERE automation_id = $3) AS automation_runs,
            coalesce(sum(cost) FILTER (WHERE automation_id = $3), 0) AS automation_cost,
            (SELECT start FROM day) AS day_start
       FROM x`,
    [factoryId, agent, automationId],
  );
  return res.rows[0]!;
}

/**
 * Serialises the creations of runs under daily caps, until the transaction ends. One key for every factory: a
 * transaction that creates runs of several factories (an evaluation batch, a batch of schedules) never waits
 * for two such locks in an order another transaction takes the other way round.
 */
export async function lockDailyCaps(q: Queryable): Promise<void> {
  await q.query("SELECT pg_advisory_xact_lock(hashtextextended('ay_daily_caps', 0))");
}

/**
 * The tree `runId` belongs to, in one statement: its root (found up the parents) first, then every run below the
 * root in creation order, each with its depth; at most `limit` runs. Empty when the run is not the team's.
 */
export async function runTree(
  q: Queryable,
  teamId: string,
  runId: string,
  limit: number,
): Promise<(RunRow & { tree_depth: number })[]> {
  const res = await q.query<RunRow & { tree_depth: number }>(
    `WITH RECURSIVE up AS (
       SELECT id, parent_run_id, 0 AS depth FROM runs WHERE id = $2 AND team_id = $1
       UNION ALL
       SELECT r.id, r.parent_run_id, up.depth + 1 FROM runs r JOIN up ON r.id = up.parent_run_id
        WHERE up.depth < 64 AND r.team_id = $1
     ), root AS (SELECT id FROM up ORDER BY depth DESC LIMIT 1),
     down AS (
       SELECT id, 0 AS depth FROM root
       UNION ALL
       SELECT r.id, down.depth + 1 FROM runs r JOIN down ON r.parent_run_id = down.id
        WHERE down.depth < 64 AND r.team_id = $1
     )
     SELECT runs.*, down.depth AS tree_depth FROM down JOIN runs ON runs.id = down.id
      ORDER BY down.depth = 0 DESC, runs.created_at, runs.id LIMIT $3`,
    [teamId, runId, limit],
  );
  return res.rows.map((r) => ({ ...r, tree_depth: Number(r.tree_depth) }));
}

/** A report, question or reply of a run tree, as its sender's event recorded it. */
export interface TreeMessageRow {
  run_id: string;
  sequence: number;
  type: 'report' | 'question' | 'reply';
  data: Record<string, unknown>;
  occurred_at: Date;
}

/**
 * The reports (the sender's copy: the one naming `to_run_id`), questions and replies of these runs, oldest first;
 * at most `limit`.
 */
export async function treeMessages(q: Queryable, runIds: readonly string[], limit: number): Promise<TreeMessageRow[]> {
  if (runIds.length === 0) return [];
  const res = await q.query<TreeMessageRow>(
    `SELECT run_id, sequence, type, data, occurred_at FROM run_events
      WHERE run_id = ANY($1::text[]) AND type IN ('report', 'question', 'reply')
        AND (type <> 'report' OR data ? 'to_run_id')
      ORDER BY occurred_at, run_id, sequence LIMIT $2`,
    [runIds, limit],
  );
  return res.rows.map((r) => ({ ...r, sequence: Number(r.sequence) }));
}

/** The states of migration 0092's partial index, runs_team_active_state (as its predicate spells them). */
const INDEXED_ACTIVE_STATES: ReadonlySet<string> = new Set(['QUEUED', 'PENDING', 'CLAIMED', 'INPROGRESS', 'BLOCKED']);

/**
 * The team's runs counted by state, for the states asked, in one grouped statement. Active states only (the
 * overview's question) read the partial index of active runs, whose predicate the statement repeats literally
 * so that every plan of it, generic ones too, may use it; other states read the (team_id, state, …) index.
 */
export async function countRunsByState(
  q: Queryable,
  teamId: string,
  states: readonly RunState[],
): Promise<Map<RunState, number>> {
  const activeOnly = states.every((state) => INDEXED_ACTIVE_STATES.has(state));
  const res = await q.query<{ state: RunState; n: string | number }>(
    `SELECT state, count(*) AS n FROM runs
      WHERE team_id = $1 AND state = ANY($2::text[])
        ${activeOnly ? "AND state IN ('QUEUED', 'PENDING', 'CLAIMED', 'INPROGRESS', 'BLOCKED')" : ''}
      GROUP BY state`,
    [teamId, [...states]],
  );
  return new Map(res.rows.map((r) => [r.state, Number(r.n)]));
}
