/** The workers domain's SQL: the connections of self-hosted workers (the executions a reconnect adopts: engine/). */
import type { Queryable } from '../kernel/db.ts';

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
}

export async function insertWorkerConnection(q: Queryable, c: NewWorkerConnection): Promise<void> {
  await q.query(
    `INSERT INTO worker_connections (id, team_id, worker_id, capacity, harnesses, default_harness, host, version, protocol, server_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [c.id, c.teamId, c.workerId, c.capacity, c.harnesses, c.defaultHarness, c.host, c.version, c.protocol, c.serverId],
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
