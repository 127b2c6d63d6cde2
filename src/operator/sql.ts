import type { Queryable } from '../kernel/db.ts';
import type { Executor } from './factory-resource.ts';

export interface KubernetesFactoryRow {
  factory_id: string;
  namespace: string;
  name: string;
  uid: string;
  executor: Executor;
  suspended: boolean;
  ingress_base_url: string | null;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

export interface RunJobRow {
  run_id: string;
  execution_id: string | null;
  followup_ids: string[];
  factory_id: string;
  namespace: string;
  job_name: string;
  job_uid: string | null;
  created_at: Date;
  finished_at: Date | null;
}

// ------------------------------------------------------------------ namespaces and teams

export async function findNamespaceTeam(q: Queryable, namespace: string): Promise<string | undefined> {
  const res = await q.query<{ team_id: string }>('SELECT team_id FROM kubernetes_namespaces WHERE namespace = $1', [
    namespace,
  ]);
  return res.rows[0]?.team_id;
}

export async function findTeamNamespace(q: Queryable, teamId: string): Promise<string | undefined> {
  const res = await q.query<{ namespace: string }>('SELECT namespace FROM kubernetes_namespaces WHERE team_id = $1', [
    teamId,
  ]);
  return res.rows[0]?.namespace;
}

/** Records the namespace's team; answers false when another process recorded one first. */
export async function insertNamespaceTeam(q: Queryable, namespace: string, teamId: string): Promise<boolean> {
  const res = await q.query(
    'INSERT INTO kubernetes_namespaces (namespace, team_id) VALUES ($1, $2) ON CONFLICT (namespace) DO NOTHING',
    [namespace, teamId],
  );
  return (res.rowCount ?? 0) > 0;
}

// ------------------------------------------------------------------ Factory resources

export async function findKubernetesFactoryByUid(q: Queryable, uid: string): Promise<KubernetesFactoryRow | undefined> {
  const res = await q.query<KubernetesFactoryRow>(
    'SELECT * FROM kubernetes_factories WHERE uid = $1 AND deleted_at IS NULL',
    [uid],
  );
  return res.rows[0];
}

export async function findKubernetesFactory(
  q: Queryable,
  factoryId: string,
): Promise<KubernetesFactoryRow | undefined> {
  const res = await q.query<KubernetesFactoryRow>(
    'SELECT * FROM kubernetes_factories WHERE factory_id = $1 AND deleted_at IS NULL',
    [factoryId],
  );
  return res.rows[0];
}

/** Factories of Factory resources, of one namespace when given. */
export async function listKubernetesFactories(q: Queryable, namespace?: string): Promise<KubernetesFactoryRow[]> {
  const res = await q.query<KubernetesFactoryRow>(
    'SELECT * FROM kubernetes_factories WHERE deleted_at IS NULL AND ($1::text IS NULL OR namespace = $1) ORDER BY namespace, name',
    [namespace ?? null],
  );
  return res.rows;
}

export async function insertKubernetesFactory(
  q: Queryable,
  row: {
    factoryId: string;
    namespace: string;
    name: string;
    uid: string;
    executor: Executor;
    suspended: boolean;
    ingressBaseUrl: string | null;
  },
): Promise<KubernetesFactoryRow> {
  const res = await q.query<KubernetesFactoryRow>(
    `INSERT INTO kubernetes_factories (factory_id, namespace, name, uid, executor, suspended, ingress_base_url)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
    [row.factoryId, row.namespace, row.name, row.uid, row.executor, row.suspended, row.ingressBaseUrl],
  );
  return res.rows[0]!;
}

export async function updateKubernetesFactory(
  q: Queryable,
  factoryId: string,
  row: { executor: Executor; suspended: boolean; ingressBaseUrl: string | null },
): Promise<KubernetesFactoryRow | undefined> {
  const res = await q.query<KubernetesFactoryRow>(
    `UPDATE kubernetes_factories SET executor = $2, suspended = $3, ingress_base_url = $4, updated_at = ay_now()
     WHERE factory_id = $1 AND deleted_at IS NULL RETURNING *`,
    [factoryId, row.executor, row.suspended, row.ingressBaseUrl],
  );
  return res.rows[0];
}

export async function softDeleteKubernetesFactory(q: Queryable, factoryId: string): Promise<void> {
  await q.query(
    'UPDATE kubernetes_factories SET deleted_at = ay_now(), updated_at = ay_now() WHERE factory_id = $1 AND deleted_at IS NULL',
    [factoryId],
  );
}

/** IDs of the factory's runs that have not ended. */
export async function listActiveFactoryRuns(q: Queryable, factoryId: string): Promise<{ id: string; state: string }[]> {
  const res = await q.query<{ id: string; state: string }>(
    `SELECT id, state FROM runs WHERE factory_id = $1 AND state IN ('QUEUED', 'PENDING', 'CLAIMED', 'INPROGRESS') ORDER BY created_at`,
    [factoryId],
  );
  return res.rows;
}

// ------------------------------------------------------------------ run Jobs

/**
 * Queued runs of factories whose Factory says `executor: kubernetes`, oldest first, locked for this
 * transaction (SKIP LOCKED: two executors never take the same run). Runs routed to a self-hosted worker
 * (worker_host other than the service's own names) are left to that worker. Runs held by a concurrency key or
 * the factory's maxActiveRuns are left too (ay_concurrency_open and ay_concurrency_admit, src/engine/functions.sql:
 * the caller claims the answered runs in the same transaction, so the admission's locks hold until they are CLAIMED).
 */
export async function lockQueuedKubernetesRuns(
  q: Queryable,
  serviceHosts: readonly string[],
  limit: number,
  namespace?: string,
): Promise<{ id: string; factory_id: string; namespace: string; uid: string; name: string }[]> {
  const res = await q.query<{ id: string; factory_id: string; namespace: string; uid: string; name: string }>(
    `SELECT r.id, r.factory_id, k.namespace, k.uid, k.name FROM runs r
     JOIN kubernetes_factories k ON k.factory_id = r.factory_id AND k.deleted_at IS NULL AND k.executor = 'kubernetes'
     WHERE r.state = 'QUEUED' AND (r.worker_host IS NULL OR r.worker_host = ANY($1)) AND ($3::text IS NULL OR k.namespace = $3)
       AND ay_concurrency_open(r.factory_id, r.concurrency_key, r.concurrency_limit)
     ORDER BY r.created_at, r.id
     LIMIT $2
     FOR UPDATE OF r SKIP LOCKED`,
    [[...serviceHosts], limit, namespace ?? null],
  );
  if (res.rows.length === 0) return res.rows;
  const admitted = await q.query<{ ids: string[] }>('SELECT ay_concurrency_admit($1::text[]) AS ids', [
    res.rows.map((r) => r.id),
  ]);
  const ids = new Set(admitted.rows[0]?.ids ?? []);
  return res.rows.filter((r) => ids.has(r.id));
}

export async function insertRunJob(
  q: Queryable,
  row: { runId: string; executionId: string; factoryId: string; namespace: string; jobName: string },
): Promise<void> {
  await q.query(
    'INSERT INTO kubernetes_run_jobs (run_id, execution_id, factory_id, namespace, job_name) VALUES ($1, $2, $3, $4, $5)',
    [row.runId, row.executionId, row.factoryId, row.namespace, row.jobName],
  );
}

export async function setRunJobLaunched(
  q: Queryable,
  runId: string,
  jobUid: string,
  followupIds: readonly string[],
): Promise<void> {
  await q.query(
    'UPDATE kubernetes_run_jobs SET job_uid = $2, followup_ids = $3 WHERE run_id = $1 AND finished_at IS NULL',
    [runId, jobUid, JSON.stringify(followupIds)],
  );
}

export async function deleteRunJob(q: Queryable, runId: string): Promise<void> {
  await q.query('DELETE FROM kubernetes_run_jobs WHERE run_id = $1 AND finished_at IS NULL', [runId]);
}

export async function countOpenRunJobs(q: Queryable, namespace?: string): Promise<number> {
  const res = await q.query<{ n: string }>(
    'SELECT count(*) AS n FROM kubernetes_run_jobs WHERE finished_at IS NULL AND ($1::text IS NULL OR namespace = $1)',
    [namespace ?? null],
  );
  return Number(res.rows[0]?.n ?? 0);
}

/** The run's open Job (not settled yet), if any. */
export async function getOpenRunJob(q: Queryable, runId: string): Promise<RunJobRow | undefined> {
  return (
    await q.query<RunJobRow>('SELECT * FROM kubernetes_run_jobs WHERE run_id = $1 AND finished_at IS NULL', [runId])
  ).rows[0];
}

export async function finishRunJob(q: Queryable, runId: string): Promise<void> {
  await q.query('UPDATE kubernetes_run_jobs SET finished_at = ay_now() WHERE run_id = $1 AND finished_at IS NULL', [
    runId,
  ]);
}

/** Jobs whose run has not been settled by them yet, with the run's current state. */
export async function listOpenRunJobs(q: Queryable, namespace?: string): Promise<(RunJobRow & { state: string })[]> {
  const res = await q.query<RunJobRow & { state: string }>(
    `SELECT j.*, r.state FROM kubernetes_run_jobs j JOIN runs r ON r.id = j.run_id
     WHERE j.finished_at IS NULL AND ($1::text IS NULL OR j.namespace = $1) ORDER BY j.created_at`,
    [namespace ?? null],
  );
  return res.rows;
}

/** Serialises the creation of a namespace's team, for the transaction. */
export async function lockNamespaceTeam(q: Queryable, teamName: string): Promise<void> {
  await q.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 7242050))', [teamName]);
}
