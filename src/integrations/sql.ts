/** SQL of the integrations domain (migration 0064): connections, installations, the provider trigger index. */
import type { Queryable } from '../kernel/db.ts';
import type { ConnectionRow, Provider } from './model.ts';
import type { IntegrationJob, IntegrationJobKind } from './integration-jobs.ts';
import type { SourceSpec } from '../sources/types.ts';
import { newId } from '../kernel/ids.ts';
import { DurableJobQueue } from '../kernel/job-queue.ts';

const CONNECTION_COLUMNS =
  'id, team_id, provider, settings, secret_version, last_event_at, last_event, last_error_at, last_error, created_at, updated_at';

export async function getConnection(
  q: Queryable,
  teamId: string,
  provider: Provider,
): Promise<ConnectionRow | undefined> {
  const res = await q.query<ConnectionRow>(
    `SELECT ${CONNECTION_COLUMNS} FROM integration_connections WHERE team_id = $1 AND provider = $2`,
    [teamId, provider],
  );
  return res.rows[0];
}

export async function listTeamConnections(q: Queryable, teamId: string): Promise<ConnectionRow[]> {
  const res = await q.query<ConnectionRow>(
    `SELECT ${CONNECTION_COLUMNS} FROM integration_connections WHERE team_id = $1 ORDER BY provider`,
    [teamId],
  );
  return res.rows;
}

/** A connection with the ciphertext of the secret that signs its deliveries (NULL while that secret is missing). */
export interface ConnectionWithSecret extends ConnectionRow {
  signing_ciphertext: Uint8Array | null;
}

export async function getConnectionById(q: Queryable, id: string): Promise<ConnectionWithSecret | undefined> {
  const res = await q.query<ConnectionWithSecret>(
    `SELECT c.id, c.team_id, c.provider, c.settings, c.secret_version, c.last_event_at, c.last_event, c.last_error_at,
            c.last_error, c.created_at, c.updated_at, s.ciphertext AS signing_ciphertext
       FROM integration_connections c
       LEFT JOIN secrets s ON s.team_id = c.team_id
        AND s.name = CASE WHEN c.provider = 'slack' THEN c.settings->>'signing_secret_name' ELSE c.settings->>'webhook_secret_name' END
      WHERE c.id = $1`,
    [id],
  );
  return res.rows[0];
}

/** Creates or replaces the team's connection to a provider; the id (and so the events URL) survives a replace. */
export async function upsertConnection(
  q: Queryable,
  row: { id: string; teamId: string; provider: Provider; settings: Record<string, string> },
): Promise<{ row: ConnectionRow; created: boolean }> {
  const res = await q.query<ConnectionRow & { inserted: boolean }>(
    `INSERT INTO integration_connections (id, team_id, provider, settings) VALUES ($1, $2, $3, $4)
     ON CONFLICT (team_id, provider) DO UPDATE SET settings = EXCLUDED.settings,
        secret_version = integration_connections.secret_version + 1, updated_at = ay_now()
     RETURNING ${CONNECTION_COLUMNS}, (xmax = 0) AS inserted`,
    [row.id, row.teamId, row.provider, JSON.stringify(row.settings)],
  );
  const { inserted, ...connection } = res.rows[0]!;
  return { row: connection, created: inserted };
}

export async function deleteConnection(
  q: Queryable,
  teamId: string,
  provider: Provider,
): Promise<ConnectionRow | undefined> {
  const res = await q.query<ConnectionRow>(
    `DELETE FROM integration_connections WHERE team_id = $1 AND provider = $2 RETURNING ${CONNECTION_COLUMNS}`,
    [teamId, provider],
  );
  return res.rows[0];
}

export interface ConnectionNotes {
  lastEvents: { connectionId: string; event: string; at: Date }[];
  lastErrors: { connectionId: string; message: string }[];
}

/**
 * Each connection's latest event and error of an outbox evaluation, written after it committed, one row per
 * statement in id order: the ingress share-locks connection rows while it accepts deliveries (in id order), so
 * an evaluation holding one row while it takes another, in its own order, could deadlock with it.
 */
export async function recordConnectionNotes(q: Queryable, notes: ConnectionNotes): Promise<void> {
  const latest = new Map<string, { event: string; at: Date }>();
  for (const e of notes.lastEvents) {
    const known = latest.get(e.connectionId);
    if (!known || known.at <= e.at) latest.set(e.connectionId, { event: e.event, at: e.at });
  }
  for (const [id, e] of [...latest].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    await q.query(
      `UPDATE integration_connections SET last_event_at = $2, last_event = $3
        WHERE id = $1 AND (last_event_at IS NULL OR last_event_at <= $2)`,
      [id, e.at.toISOString(), e.event],
    );
  }
  const errors = new Map(notes.lastErrors.map((e) => [e.connectionId, e.message]));
  for (const [id, message] of [...errors].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    await recordLastError(q, id, message);
}

export async function recordLastError(q: Queryable, connectionId: string, message: string): Promise<void> {
  await q.query('UPDATE integration_connections SET last_error_at = ay_now(), last_error = $2 WHERE id = $1', [
    connectionId,
    message.slice(0, 500),
  ]);
}

export interface InstallationRow {
  installation_id: string;
  account_login: string | null;
  first_seen_at: Date;
  last_seen_at: Date;
}

export async function upsertInstallation(
  q: Queryable,
  connectionId: string,
  installationId: number,
  accountLogin: string | null,
): Promise<void> {
  await q.query(
    `INSERT INTO github_installations (connection_id, installation_id, account_login) VALUES ($1, $2, $3)
     ON CONFLICT (connection_id, installation_id)
     DO UPDATE SET last_seen_at = ay_now(), account_login = coalesce(EXCLUDED.account_login, github_installations.account_login)`,
    [connectionId, installationId, accountLogin],
  );
}

export async function listInstallations(q: Queryable, connectionId: string): Promise<InstallationRow[]> {
  const res = await q.query<InstallationRow>(
    `SELECT installation_id::text AS installation_id, account_login, first_seen_at, last_seen_at
       FROM github_installations WHERE connection_id = $1 ORDER BY installation_id`,
    [connectionId],
  );
  return res.rows;
}

/** The installation that last delivered an event for an account (owner login), if any. */
export async function installationForOwner(
  q: Queryable,
  connectionId: string,
  owner: string,
): Promise<string | undefined> {
  const res = await q.query<{ installation_id: string }>(
    `SELECT installation_id::text AS installation_id FROM github_installations
      WHERE connection_id = $1 AND lower(account_login) = lower($2) ORDER BY last_seen_at DESC LIMIT 1`,
    [connectionId, owner],
  );
  return res.rows[0]?.installation_id;
}

/** The team's Slack/Linear connections that a factory declares in `integrations`. */
export async function declaredConnections(
  q: Queryable,
  factoryId: string,
): Promise<{ provider: string; settings: Record<string, string> }[]> {
  const res = await q.query<{ provider: string; settings: Record<string, string> }>(
    `SELECT c.provider, c.settings FROM factories f
       JOIN integration_connections c ON c.team_id = f.team_id
      WHERE f.id = $1 AND c.provider IN (
        SELECT lower(i->>'type') FROM jsonb_array_elements(
          CASE WHEN jsonb_typeof(f.definition->'factory'->'integrations') = 'array'
               THEN f.definition->'factory'->'integrations' ELSE '[]'::jsonb END) i)
      ORDER BY c.provider`,
    [factoryId],
  );
  return res.rows;
}

// ---- Integration jobs (integration-jobs.ts runs them) ----

export async function enqueueIntegrationJob(
  q: Queryable,
  job: Pick<IntegrationJob<unknown>, 'kind' | 'team_id' | 'connection_id' | 'delivery_id' | 'factory_id' | 'input'>,
): Promise<boolean> {
  const res = await q.query(
    `INSERT INTO integration_jobs (id, kind, team_id, connection_id, delivery_id, factory_id, input)
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING RETURNING id`,
    [
      newId('igj'),
      job.kind,
      job.team_id,
      job.connection_id,
      job.delivery_id,
      job.factory_id,
      JSON.stringify(job.input),
    ],
  );
  return res.rowCount === 1;
}

/** A job of a delivery, in whatever state. */
export async function deliveryJob(
  q: Queryable,
  deliveryId: string,
  kind: IntegrationJobKind,
): Promise<{ state: string; result: Record<string, unknown>; error: string | null } | undefined> {
  const res = await q.query<{ state: string; result: Record<string, unknown>; error: string | null }>(
    `SELECT state, result, error FROM integration_jobs WHERE delivery_id = $1 AND kind = $2 AND factory_id = ''`,
    [deliveryId, kind],
  );
  return res.rows[0];
}

/** The integrations' job queue on the kernel's durable job queue (one claim with a lease, back-off by attempts). */
export const INTEGRATION_JOBS = new DurableJobQueue<IntegrationJob<unknown>>({
  table: 'integration_jobs',
  leaseSeconds: 300,
  maxAttempts: 5,
  backoffSeconds: [5, 30, 120, 600],
});

export async function saveIntegrationJobResult(q: Queryable, id: string, result: string): Promise<void> {
  await q.query('UPDATE integration_jobs SET result = result || $2::jsonb WHERE id = $1', [id, result]);
}

export async function endIntegrationJob(
  q: Queryable,
  id: string,
  state: 'done' | 'failed',
  result: string,
  error: string | null,
): Promise<void> {
  await q.query(
    `UPDATE integration_jobs SET state = $2, result = result || $3::jsonb, error = $4, finished_at = ay_now() WHERE id = $1`,
    [id, state, result, error],
  );
}

/** Hands a delivery back to the outbox (its evaluation waited for a job). */
export async function requeueDelivery(q: Queryable, deliveryId: string): Promise<void> {
  await q.query('UPDATE webhook_deliveries SET outbox_pending = true WHERE id = $1', [deliveryId]);
}

/** The connection's settings (secret names, mode, app id); undefined once it is deleted. */
export async function connectionSettings(
  q: Queryable,
  connectionId: string,
): Promise<Record<string, string> | undefined> {
  const res = await q.query<{ settings: Record<string, string> }>(
    'SELECT settings FROM integration_connections WHERE id = $1',
    [connectionId],
  );
  return res.rows[0]?.settings;
}

/** The connection's `settings.mode` (`app` for a GitHub App). */
export async function connectionMode(q: Queryable, connectionId: string): Promise<string | undefined> {
  const res = await q.query<{ mode: string | null }>(
    "SELECT settings->>'mode' AS mode FROM integration_connections WHERE id = $1",
    [connectionId],
  );
  return res.rows[0]?.mode ?? undefined;
}

/** The team's live git factories whose source follows `branch`. */
export async function gitFactoriesOnBranch(
  q: Queryable,
  teamId: string,
  branch: string,
): Promise<{ id: string; source: SourceSpec }[]> {
  const res = await q.query<{ id: string; source: SourceSpec }>(
    `SELECT id, source FROM factories
      WHERE team_id = $1 AND deleted_at IS NULL AND source->>'type' = 'git' AND source->>'branch' = $2`,
    [teamId, branch],
  );
  return res.rows;
}
