/**
 * The workers domain's SQL: the connections of self-hosted workers, the executions a reconnect adopts, and the
 * worker tokens workers connect with.
 */
import type { Queryable, QueryResult } from '../kernel/db.ts';

export interface NewWorkerConnection {
  id: string;
  teamId: string;
  workerId: string;
  capacity: number;
  harnesses: readonly string[];
  defaultHarness: string | null;
  host: string | null;
  version: string;
  protocol: number;
  /** The server process the socket is connected to. */
  serverId: string;
  /** What registered it: a team admin key or a worker token, and its id. */
  credentialKind: 'key' | 'token';
  credentialId: string;
}

export async function insertWorkerConnection(q: Queryable, c: NewWorkerConnection): Promise<void> {
  await q.query(
    `INSERT INTO worker_connections (id, team_id, worker_id, capacity, harnesses, default_harness, host, version, protocol,
       server_id, credential_kind, credential_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
    [
      c.id,
      c.teamId,
      c.workerId,
      c.capacity,
      c.harnesses,
      c.defaultHarness,
      c.host,
      c.version,
      c.protocol,
      c.serverId,
      c.credentialKind,
      c.credentialId,
    ],
  );
}

export async function markDisconnected(q: Queryable, connectionId: string): Promise<void> {
  await q.query('UPDATE worker_connections SET disconnected_at = ay_now(), last_seen_at = ay_now() WHERE id = $1', [
    connectionId,
  ]);
}

export async function markSeen(q: Queryable, connectionId: string, load: number): Promise<void> {
  await q.query('UPDATE worker_connections SET last_seen_at = ay_now(), load = $2 WHERE id = $1', [connectionId, load]);
}

/**
 * Executions a worker still runs after a reconnect: the new connection (`executor`) holds their leases from
 * now on. Answers those adopted (live, of the team and the worker, of runs this registration may receive: the
 * rule of ay_lock_worker_runs, so that a worker cannot take over the reports of a run it could not claim).
 */
export function adoptExecutions(
  q: Queryable,
  p: {
    executionIds: readonly string[];
    teamId: string;
    workerId: string;
    executor: string;
    leaseMs: number;
    trusted: boolean;
    registrant: string;
  },
): Promise<QueryResult<{ id: string; run_id: string; harness: string; started: boolean }>> {
  return q.query<{ id: string; run_id: string; harness: string; started: boolean }>(
    `UPDATE executions e SET executor = $4, lease_expires_at = ay_now() + $5 * interval '1 millisecond', heartbeat_at = ay_now()
       FROM runs r
      WHERE e.id = ANY($1::text[]) AND e.team_id = $2 AND e.worker_id = $3 AND e.ended_at IS NULL AND r.id = e.run_id
        AND ($6::boolean OR r.acts_as IS NULL OR EXISTS (
          SELECT 1 FROM integration_identities i
          WHERE i.team_id = r.team_id AND i.subject_id = $7 AND i.provider = r.acts_as->>'provider'
            AND lower(i.external_id) = lower(r.acts_as->>'account')))
      RETURNING e.id, e.run_id, e.harness, (e.started_at IS NOT NULL) AS started`,
    [p.executionIds, p.teamId, p.workerId, p.executor, p.leaseMs, p.trusted, p.registrant],
  );
}

export interface WorkerTokenRow {
  id: string;
  team_id: string;
  name: string;
  prefix: string;
  worker_ids: string[];
  created_by: string;
  created_by_name: string;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

const TOKEN_COLUMNS =
  'id, team_id, name, prefix, worker_ids, created_by, created_by_name, created_at, last_used_at, revoked_at';

export async function insertWorkerToken(
  q: Queryable,
  t: Omit<WorkerTokenRow, 'created_at' | 'last_used_at' | 'revoked_at'> & { tokenHash: string },
): Promise<WorkerTokenRow> {
  const res = await q.query<WorkerTokenRow>(
    `INSERT INTO worker_tokens (id, team_id, name, prefix, token_hash, worker_ids, created_by, created_by_name)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${TOKEN_COLUMNS}`,
    [t.id, t.team_id, t.name, t.prefix, t.tokenHash, t.worker_ids, t.created_by, t.created_by_name],
  );
  return res.rows[0]!;
}

export async function listWorkerTokens(q: Queryable, teamId: string): Promise<WorkerTokenRow[]> {
  const res = await q.query<WorkerTokenRow>(
    `SELECT ${TOKEN_COLUMNS} FROM worker_tokens WHERE team_id = $1 ORDER BY created_at, id`,
    [teamId],
  );
  return res.rows;
}

/** Revokes a token of the team (idempotent); undefined when the team has no such token. */
export async function revokeWorkerToken(q: Queryable, teamId: string, id: string): Promise<WorkerTokenRow | undefined> {
  const res = await q.query<WorkerTokenRow>(
    `UPDATE worker_tokens SET revoked_at = coalesce(revoked_at, ay_now()) WHERE team_id = $1 AND id = $2
     RETURNING ${TOKEN_COLUMNS}`,
    [teamId, id],
  );
  return res.rows[0];
}

/** The live (not revoked) token with this hash, its use recorded. */
export async function useWorkerToken(q: Queryable, tokenHash: string): Promise<WorkerTokenRow | undefined> {
  const res = await q.query<WorkerTokenRow>(
    `UPDATE worker_tokens SET last_used_at = ay_now() WHERE token_hash = $1 AND revoked_at IS NULL
     RETURNING ${TOKEN_COLUMNS}`,
    [tokenHash],
  );
  return res.rows[0];
}
