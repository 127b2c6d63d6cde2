/**
 * The execution domain's SQL: claims, starts and ends (the calls of the functions in functions.sql), leases,
 * executor presence, waiting messages, what an assignment reads. Every statement of src/execution/ is here.
 */
import type { Queryable, QueryResult, SqlValue } from '../kernel/db.ts';
import type { AssignmentInputs } from './assignment-builder.ts';
import type { RunRow } from '../engine/model.ts';
import type { DispatchFacts } from '../runs/sql.ts';

// ---- the queue (functions.sql) ----

// ---- leases and executions ----

/** Of `ids`, the executions live or ended within `retentionMs` (their workspaces are kept). */
export function executionsToKeep(
  q: Queryable,
  ids: readonly string[],
  retentionMs: number,
): Promise<QueryResult<{ id: string }>> {
  return q.query<{ id: string }>(
    `SELECT id FROM executions WHERE id = ANY($1::text[]) AND (ended_at IS NULL OR ended_at > ay_now() - $2 * interval '1 millisecond')`,
    [ids, retentionMs],
  );
}

// ---- runs as executions change them ----

/** Consumes follow-ups (id, execution) that are still waiting. */
export async function consumeFollowups(q: Queryable, pairs: readonly (readonly [string, string])[]): Promise<void> {
  await q.query(
    `UPDATE run_followups f SET consumed_by_execution = x.execution_id, consumed_at = ay_now()
       FROM unnest($1::text[], $2::text[]) AS x(id, execution_id)
       WHERE f.id = x.id AND f.consumed_by_execution IS NULL`,
    [pairs.map((p) => p[0]), pairs.map((p) => p[1])],
  );
}

export function waitingFollowups(
  q: Queryable,
  runIds: readonly string[],
): Promise<QueryResult<{ id: string; run_id: string; message: string }>> {
  return q.query<{ id: string; run_id: string; message: string }>(
    `SELECT id, run_id, message FROM run_followups WHERE run_id = ANY($1::text[]) AND consumed_by_execution IS NULL ORDER BY created_at, id`,
    [runIds],
  );
}

// ---- executor presence and waiting messages ----

export interface ExecutorProcess {
  id: string;
  host: string;
  capacity: number;
  harnesses: readonly string[];
  defaultHarness: string | null;
}

export async function registerExecutorProcess(q: Queryable, p: ExecutorProcess): Promise<void> {
  await q.query(
    `INSERT INTO executor_processes (id, host, capacity, harnesses, default_harness, last_seen_at) VALUES ($1, $2, $3, $4, $5, ay_now())
       ON CONFLICT (id) DO UPDATE SET capacity = excluded.capacity, harnesses = excluded.harnesses,
         default_harness = excluded.default_harness, last_seen_at = ay_now()`,
    [p.id, p.host, p.capacity, p.harnesses, p.defaultHarness],
  );
}

export async function deleteExecutorProcess(q: Queryable, id: string): Promise<void> {
  await q.query('DELETE FROM executor_processes WHERE id = $1', [id]);
}

/** Presence records of executor processes and worker connections not seen for a week. */
export async function deleteStalePresence(q: Queryable): Promise<void> {
  await q.query(`DELETE FROM executor_processes WHERE last_seen_at < ay_now() - interval '7 days'`);
  await q.query(`DELETE FROM worker_connections WHERE last_seen_at < ay_now() - interval '7 days'`);
}

export interface Offer {
  /** null for the service's executors. */
  team_id: string | null;
  worker_id: string | null;
  harnesses: string[];
  default_harness: string | null;
  /** A worker connection registered with a worker token (it receives no run acting as another member). */
  by_token: boolean;
}

/** What the worker connections and executor processes seen within `presenceMs` offer. */
export function presentOffers(q: Queryable, presenceMs: number): Promise<QueryResult<Offer>> {
  return q.query<Offer>(
    `SELECT team_id, worker_id, harnesses, default_harness, coalesce(credential_kind = 'token', false) AS by_token
       FROM worker_connections
       WHERE disconnected_at IS NULL AND last_seen_at > ay_now() - $1 * interval '1 millisecond'
       UNION ALL
       SELECT NULL, NULL, harnesses, default_harness, false FROM executor_processes
       WHERE last_seen_at > ay_now() - $1 * interval '1 millisecond'`,
    [presenceMs],
  );
}

export interface WaitingRun {
  id: string;
  team_id: string;
  worker_host: string | null;
  harness: string;
  /** The run acts as a member (credentialStrategy CREATOR). */
  acts_as_member: boolean;
  message: string | null;
}

/**
 * The oldest queued runs not for the operator. Service runs and worker runs apart, each through its partial
 * index of queued runs (migration 0030): written as one `state = 'QUEUED'`, PostgreSQL before 18 read every run.
 */
export function queuedRunsToAnnotate(q: Queryable): Promise<QueryResult<WaitingRun>> {
  return q.query<WaitingRun>(
    `SELECT r.id, r.team_id, r.worker_host, coalesce(nullif(lower(r.config->'harness'->>'type'), ''), 'oz') AS harness,
         r.acts_as IS NOT NULL AS acts_as_member, r.status_message->>'message' AS message
       FROM (
         (SELECT * FROM runs WHERE state = 'QUEUED' AND worker_host IS NULL ORDER BY created_at LIMIT 1000)
         UNION ALL
         (SELECT * FROM runs WHERE state = 'QUEUED' AND worker_host IS NOT NULL ORDER BY created_at LIMIT 1000)
       ) r
       WHERE r.factory_id IS NULL OR NOT EXISTS (
         SELECT 1 FROM kubernetes_factories k WHERE k.factory_id = r.factory_id AND k.deleted_at IS NULL AND k.executor = 'kubernetes')
       ORDER BY r.created_at LIMIT 1000`,
  );
}

// ---- what an assignment reads ----

/** The select-list columns `previous`, `followups` and `attachments` of AssignmentInputs, for a run and its execution. */
export function ASSIGNMENT_INPUT_COLUMNS(runId: string, executionId: string): string {
  return `(SELECT coalesce(json_agg(json_build_object('id', e.id, 'agent_session_id', e.agent_session_id, 'started', e.started_at IS NOT NULL)
         ORDER BY e.attempt DESC), '[]'::json)
       FROM executions e WHERE e.run_id = ${runId} AND e.id <> ${executionId}) AS previous,
     (SELECT coalesce(json_agg(json_build_object('id', f.id, 'message', f.message) ORDER BY f.created_at, f.id), '[]'::json)
       FROM run_followups f WHERE f.run_id = ${runId} AND f.consumed_by_execution IS NULL) AS followups,
     (SELECT coalesce(json_agg(json_build_object('file_name', a.file_name, 'mime_type', a.mime_type, 'data', encode(a.data, 'base64'))
         ORDER BY a.file_name), '[]'::json)
       FROM run_attachments a WHERE a.run_id = ${runId}) AS attachments`;
}

/** What assignments need from the database, for several claimed runs in one query. */
export function assignmentInputs(
  q: Queryable,
  claims: readonly { runId: string; executionId: string }[],
): Promise<QueryResult<AssignmentInputs>> {
  return q.query<AssignmentInputs>(
    `SELECT x.run_id, ${ASSIGNMENT_INPUT_COLUMNS('x.run_id', 'x.execution_id')}
     FROM unnest($1::text[], $2::text[]) AS x(run_id, execution_id)`,
    [claims.map((c) => c.runId), claims.map((c) => c.executionId)],
  );
}

/** The newest `result` event of a run. */
export function lastResultEvent(q: Queryable, runId: string): Promise<QueryResult<{ data: { text?: string } }>> {
  return q.query<{ data: { text?: string } }>(
    `SELECT data FROM run_events WHERE run_id = $1 AND type = 'result' ORDER BY sequence DESC LIMIT 1`,
    [runId],
  );
}

/** A provider whose connection holds a token an agent may ask for, and the setting naming its managed secret. */
export interface ChatTokenSetting {
  provider: string;
  setting: string;
}

/** What a factory run's definition sets for its execution (`factoryRunSettings`). */
export interface FactoryRunSettings {
  /** Its runner's container image, `x-agentyard-limits` and `network` (null: no runner, or not set). */
  image: string | null;
  limits: unknown;
  network: unknown;
  /** The connection tokens its secrets ask for: the providers whose token's managed secret the run declares. */
  askedTokens: { provider: string; secret: string }[];
}

/**
 * Run id → what its factory's applied definition sets for its execution, in one statement (a start waits for it;
 * runs of no factory are absent):
 * - its runner (the run's `runner_id`, else its factory agent's runner): the container image, the limits, the network;
 * - the connection tokens it asks for: a declared integration (`tokens`: the providers and the setting naming the
 *   managed secret of their token) whose token's secret is among the run's `secrets` (its automation's, else its
 *   agent's, else the factory's), for runs that act as no member.
 */
export async function factoryRunSettings(
  q: Queryable,
  runIds: readonly string[],
  tokens: readonly ChatTokenSetting[],
): Promise<Map<string, FactoryRunSettings>> {
  if (runIds.length === 0) return new Map();
  const res = await q.query<{
    run_id: string;
    image: string | null;
    limits: unknown;
    network: unknown;
    asked: { provider: string; secret: string }[] | null;
  }>(
    `WITH fr AS (
       SELECT r.id, r.team_id, r.config, r.automation_id, r.acts_as, f.team_id AS factory_team, f.definition,
              CASE WHEN jsonb_typeof(f.definition->'agents') = 'array' THEN f.definition->'agents' ELSE '[]'::jsonb END AS agents
         FROM runs r JOIN factories f ON f.id = r.factory_id AND f.deleted_at IS NULL
        WHERE r.id = ANY($1::text[]))
     SELECT fr.id AS run_id, rn.image, rn.limits, rn.network, tok.asked
       FROM fr
       LEFT JOIN LATERAL (
         SELECT x->'platform'->>'dockerImage' AS image, x->'limits' AS limits, x->'network' AS network
           FROM jsonb_array_elements(CASE WHEN jsonb_typeof(fr.definition->'runners') = 'array'
                                          THEN fr.definition->'runners' ELSE '[]'::jsonb END) x
          WHERE x->>'name' = coalesce(fr.config->>'runner_id',
                  (SELECT a->'execution'->>'runner' FROM jsonb_array_elements(fr.agents) a
                    WHERE a->>'name' = fr.config->>'name' LIMIT 1))
          LIMIT 1) rn ON true
       LEFT JOIN LATERAL (
         SELECT jsonb_agg(jsonb_build_object('provider', c.provider, 'secret', c.settings->>t.setting) ORDER BY c.provider) AS asked
           FROM unnest($2::text[], $3::text[]) AS t(provider, setting)
           JOIN integration_connections c ON c.team_id = fr.factory_team AND c.provider = t.provider
          WHERE cardinality($2::text[]) > 0 AND fr.acts_as IS NULL
            AND t.provider IN (
              SELECT lower(i->>'type') FROM jsonb_array_elements(
                CASE WHEN jsonb_typeof(fr.definition->'factory'->'integrations') = 'array'
                     THEN fr.definition->'factory'->'integrations' ELSE '[]'::jsonb END) i)
            AND c.settings->>t.setting IN (
              SELECT jsonb_array_elements_text(CASE WHEN jsonb_typeof(s.secrets) = 'array' THEN s.secrets ELSE '[]'::jsonb END)
                FROM (SELECT coalesce(
                        (SELECT au->'execution'->'secrets'
                           FROM automations am
                           CROSS JOIN LATERAL jsonb_array_elements(
                             CASE WHEN jsonb_typeof(fr.definition->'automations') = 'array'
                                  THEN fr.definition->'automations' ELSE '[]'::jsonb END) au
                          WHERE am.id = fr.automation_id AND au->>'name' = am.name LIMIT 1),
                        (SELECT a->'execution'->'secrets' FROM jsonb_array_elements(fr.agents) a
                          WHERE a->>'name' = fr.config->>'name' LIMIT 1),
                        fr.definition->'factory'->'secrets') AS secrets) s)) tok ON true`,
    [runIds, tokens.map((t) => t.provider), tokens.map((t) => t.setting)],
  );
  return new Map(
    res.rows.map((r) => [
      r.run_id,
      { image: r.image, limits: r.limits, network: r.network, askedTokens: r.asked ?? [] },
    ]),
  );
}

export interface SkillLookup {
  /** Names of the factories looked in, in the order they are looked in. */
  factories: string[];
  /** The skill directories looked for in each factory, in order. */
  dirs: string[];
  /** The first factory (then directory) holding `<dir>/SKILL.md`, with the files under that directory. */
  factory_name: string | null;
  dir: string | null;
  prefix: string | null;
  files: { path: string; content: string }[] | null;
}

/**
 * A skill's whole look-up in one statement (an assignment waits for it before the run starts): the run's
 * factory, or the team's factories by name; the agent (the automation's, else the run's configuration name);
 * the candidate directories (`dirs`, else the agent's `skills/<name>` then the shared one); the first factory
 * and directory holding a SKILL.md, and the files under it.
 */
export async function lookUpSkill(
  q: Queryable,
  run: { team_id: string; factory_id: string | null; automation_id: string | null; config_name: string | null },
  dirs: string[] | null,
  name: string,
): Promise<SkillLookup> {
  const params: SqlValue[] = [run.factory_id, run.team_id, run.automation_id, run.config_name, dirs, name];
  return (
    await q.query<SkillLookup>(
      `WITH f AS (
    SELECT id, name, row_number() OVER (ORDER BY name, id) AS ord FROM factories
    WHERE CASE WHEN $1::text IS NULL THEN team_id = $2::text AND deleted_at IS NULL ELSE id = $1::text END
  ), a AS (
    SELECT coalesce((SELECT agent FROM automations WHERE id = $3::text), $4::text) AS agent
  ), d AS (
    SELECT coalesce($5::text[], CASE WHEN coalesce(a.agent, '') <> '' THEN ARRAY['agents/' || a.agent || '/skills/' || $6::text, 'skills/' || $6::text]
      ELSE ARRAY['skills/' || $6::text] END) AS dirs FROM a
  ), c AS (
    SELECT x.dir, x.ord, CASE WHEN x.dir = '' THEN '' ELSE x.dir || '/' END AS prefix FROM d, unnest(d.dirs) WITH ORDINALITY AS x(dir, ord)
  ), hit AS (
    SELECT f.id, f.name, c.dir, c.prefix FROM f CROSS JOIN c
    WHERE EXISTS (SELECT 1 FROM factory_files ff WHERE ff.factory_id = f.id AND ff.path = c.prefix || 'SKILL.md')
    ORDER BY f.ord, c.ord LIMIT 1
  )
  SELECT (SELECT coalesce(json_agg(f.name ORDER BY f.ord), '[]'::json) FROM f) AS factories, (SELECT dirs FROM d) AS dirs,
    h.name AS factory_name, h.dir, h.prefix,
    (SELECT coalesce(json_agg(json_build_object('path', ff.path, 'content', ff.content) ORDER BY ff.path), '[]'::json)
      FROM factory_files ff WHERE ff.factory_id = h.id AND starts_with(ff.path, h.prefix)) AS files
  FROM (SELECT 1) AS one LEFT JOIN hit h ON true`,
      params,
    )
  ).rows[0]!;
}

// ---- the workers list (GET /workers) ----

export interface WorkerConnectionRow {
  id: string;
  worker_id: string;
  connected: boolean;
  capacity: number;
  load: number;
  harnesses: string[];
  default_harness: string | null;
  host: string | null;
  version: string | null;
  protocol: number;
  /** What registered it: `key` (a team admin's API key) or `token` (a worker token), and its id; null before 0075. */
  credential_kind: 'key' | 'token' | null;
  credential_id: string | null;
  connected_at: Date;
  last_seen_at: Date;
  disconnected_at: Date | null;
}

/** A team's worker connections seen within `recentMs`; connected: seen within `staleMs` and not disconnected. */
export function listWorkerConnections(
  q: Queryable,
  teamId: string,
  staleMs: number,
  recentMs: number,
): Promise<QueryResult<WorkerConnectionRow>> {
  return q.query<WorkerConnectionRow>(
    `SELECT id, worker_id, (disconnected_at IS NULL AND last_seen_at > ay_now() - $2 * interval '1 millisecond') AS connected,
           capacity, load, harnesses, default_harness, host, version, protocol, credential_kind, credential_id,
           connected_at, last_seen_at, disconnected_at
         FROM worker_connections
         WHERE team_id = $1 AND last_seen_at > ay_now() - $3 * interval '1 millisecond'
         ORDER BY worker_id, connected DESC, last_seen_at DESC`,
    [teamId, staleMs, recentMs],
  );
}

// ---- run tokens (run-token.ts) ----

export async function insertRunTokens(
  q: Queryable,
  tokens: readonly { hash: string; executionId: string; runId: string; teamId: string }[],
): Promise<void> {
  if (tokens.length === 0) return;
  await q.query(
    `INSERT INTO run_tokens (token_hash, execution_id, run_id, team_id)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
     ON CONFLICT (execution_id) DO UPDATE SET token_hash = excluded.token_hash`,
    [
      tokens.map((t) => t.hash),
      tokens.map((t) => t.executionId),
      tokens.map((t) => t.runId),
      tokens.map((t) => t.teamId),
    ],
  );
}

/**
 * `liveRunToken` and, in the same statement, what a dispatch from that run is checked against (`dispatchFacts`
 * with the run as the parent and its factory) and when its factory last changed (null: none, or deleted).
 */
export async function liveRunTokenForDispatch(
  q: Queryable,
  hash: string,
): Promise<{ holder: LiveTokenRow; facts: DispatchFacts; factoryUpdatedAt: Date | null } | undefined> {
  const res = await q.query<
    LiveTokenRow & {
      tree_depth: number;
      tree_root_id: string;
      tree_root_created_at: Date;
      tree_children: number;
      factory_active: number;
      factory_updated_at: Date | null;
    }
  >(
    `WITH RECURSIVE holder AS (
       SELECT r.*, t.execution_id AS token_execution_id
         FROM run_tokens t
         JOIN executions e ON e.id = t.execution_id
         JOIN runs r ON r.id = t.run_id
        WHERE t.token_hash = $1 AND e.ended_at IS NULL AND r.execution_id = t.execution_id
          AND r.team_id = t.team_id AND r.state IN ('CLAIMED', 'INPROGRESS')
     ), up AS (
       SELECT id, parent_run_id, created_at, 0 AS depth FROM holder
       UNION ALL
       SELECT r.id, r.parent_run_id, r.created_at, up.depth + 1 FROM runs r JOIN up ON r.id = up.parent_run_id
        WHERE up.depth < 64
     ), top AS (SELECT id, created_at, depth FROM up ORDER BY depth DESC LIMIT 1)
     SELECT h.*, (SELECT depth FROM top) AS tree_depth, (SELECT id FROM top) AS tree_root_id,
            (SELECT created_at FROM top) AS tree_root_created_at,
            (SELECT count(*) FROM runs c WHERE c.parent_run_id = h.id)::int AS tree_children,
            CASE WHEN h.factory_id IS NULL THEN 0 ELSE (SELECT count(*) FROM runs a WHERE a.factory_id = h.factory_id
               AND a.state IN ('QUEUED', 'PENDING', 'CLAIMED', 'INPROGRESS')) END::int AS factory_active,
            (SELECT f.updated_at FROM factories f WHERE f.id = h.factory_id AND f.deleted_at IS NULL) AS factory_updated_at
       FROM holder h`,
    [hash],
  );
  const row = res.rows[0];
  if (!row) return undefined;
  const {
    tree_depth: depth,
    tree_root_id: rootId,
    tree_root_created_at: rootCreatedAt,
    tree_children: children,
    factory_active: active,
    factory_updated_at: factoryUpdatedAt,
    ...holder
  } = row;
  return {
    holder,
    facts: {
      depth: Number(depth),
      root_id: rootId,
      root_created_at: rootCreatedAt,
      children: Number(children),
      active: Number(active),
    },
    factoryUpdatedAt,
  };
}

/** The run a token speaks for (as `SELECT * FROM runs` reads it), with the token's execution. */
export type LiveTokenRow = RunRow & { token_execution_id: string };

/** The run of a token, while the token's execution runs and is its run's current one. */
export async function liveRunToken(q: Queryable, hash: string): Promise<LiveTokenRow | undefined> {
  const res = await q.query<LiveTokenRow>(
    `SELECT r.*, t.execution_id AS token_execution_id
       FROM run_tokens t
       JOIN executions e ON e.id = t.execution_id
       JOIN runs r ON r.id = t.run_id
      WHERE t.token_hash = $1 AND e.ended_at IS NULL AND r.execution_id = t.execution_id
        AND r.team_id = t.team_id AND r.state IN ('CLAIMED', 'INPROGRESS')`,
    [hash],
  );
  return res.rows[0];
}
