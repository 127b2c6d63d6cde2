import type { Diagnostic } from '../../definitions/diagnostic.ts';
import type { FactoryDefinition, WebhookDefinition } from '../../definitions/model.ts';
import type { FactoryFileInput } from '../../definitions/load.ts';
import type { SourceSpec } from '../../sources/types.ts';
import type { Queryable } from '../../kernel/db.ts';
import type { ProviderTriggerRow } from './provider-trigger-index.ts';
import type {
  ApplyResult,
  AutomationRow,
  Change,
  FactoryRow,
  PlanWarning,
  RevisionReason,
  SourceFailure,
  WebhookRow,
} from './model.ts';

/** Seed of the per-factory advisory lock keys (hashtextextended of the factory ID). */
const FACTORY_LOCK_SEED = 7_242_010;

// ------------------------------------------------------------------ factories

export async function insertFactory(
  q: Queryable,
  f: { id: string; teamId: string; name: string; source: SourceSpec },
): Promise<FactoryRow> {
  const res = await q.query<FactoryRow>(
    'INSERT INTO factories (id, team_id, name, source) VALUES ($1, $2, $3, $4) RETURNING *',
    [f.id, f.teamId, f.name, JSON.stringify(f.source)],
  );
  return res.rows[0]!;
}

export async function updateFactorySource(
  q: Queryable,
  id: string,
  source: SourceSpec,
): Promise<FactoryRow | undefined> {
  const res = await q.query<FactoryRow>(
    'UPDATE factories SET source = $2, updated_at = ay_now() WHERE id = $1 AND deleted_at IS NULL RETURNING *',
    [id, JSON.stringify(source)],
  );
  return res.rows[0];
}

export async function getFactory(q: Queryable, id: string): Promise<FactoryRow | undefined> {
  const res = await q.query<FactoryRow>('SELECT * FROM factories WHERE id = $1 AND deleted_at IS NULL', [id]);
  return res.rows[0];
}

export async function getTeamFactory(q: Queryable, teamId: string, id: string): Promise<FactoryRow | undefined> {
  const res = await q.query<FactoryRow>(
    'SELECT * FROM factories WHERE id = $1 AND team_id = $2 AND deleted_at IS NULL',
    [id, teamId],
  );
  return res.rows[0];
}

export async function findFactoryByName(q: Queryable, teamId: string, name: string): Promise<FactoryRow | undefined> {
  const res = await q.query<FactoryRow>(
    'SELECT * FROM factories WHERE team_id = $1 AND name = $2 AND deleted_at IS NULL',
    [teamId, name],
  );
  return res.rows[0];
}

export async function listAllFactories(q: Queryable): Promise<FactoryRow[]> {
  return (await q.query<FactoryRow>('SELECT * FROM factories WHERE deleted_at IS NULL ORDER BY created_at, id')).rows;
}

/** A team's factories, by creation time, after the keyset cursor. `search` matches name, definition name or alias. */
export async function listTeamFactories(
  q: Queryable,
  teamId: string,
  options: { limit: number; after?: { createdAt: string; id: string } | undefined; search?: string | undefined },
): Promise<FactoryRow[]> {
  const params: unknown[] = [teamId];
  let where = 'team_id = $1 AND deleted_at IS NULL';
  if (options.after) {
    params.push(options.after.createdAt, options.after.id);
    where += ` AND (created_at, id) > ($${params.length - 1}::timestamptz, $${params.length})`;
  }
  if (options.search) {
    params.push(`%${options.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
    const p = `$${params.length}`;
    where += ` AND (name ILIKE ${p} OR definition->'factory'->>'name' ILIKE ${p} OR definition->'factory'->>'alias' ILIKE ${p})`;
  }
  params.push(options.limit);
  const res = await q.query<FactoryRow>(
    `SELECT * FROM factories WHERE ${where} ORDER BY created_at, id LIMIT $${params.length}`,
    params as string[],
  );
  return res.rows;
}

/** Deletes a factory: its webhooks stop answering at once (soft delete keeps their delivery history). */
export async function softDeleteFactory(q: Queryable, teamId: string, id: string): Promise<FactoryRow | undefined> {
  const res = await q.query<FactoryRow>(
    'UPDATE factories SET deleted_at = ay_now(), updated_at = ay_now() WHERE id = $1 AND team_id = $2 AND deleted_at IS NULL RETURNING *',
    [id, teamId],
  );
  if (!res.rows[0]) return undefined;
  await q.query(
    'UPDATE webhooks SET deleted_at = ay_now(), updated_at = ay_now() WHERE factory_id = $1 AND deleted_at IS NULL',
    [id],
  );
  await q.query(
    'DELETE FROM automation_webhook_triggers WHERE automation_id IN (SELECT id FROM automations WHERE factory_id = $1)',
    [id],
  );
  await q.query(
    'UPDATE automations SET deleted_at = ay_now(), updated_at = ay_now() WHERE factory_id = $1 AND deleted_at IS NULL',
    [id],
  );
  return res.rows[0];
}

/** Serialises applies of one factory across every process sharing the database; released at commit. */
export async function lockFactory(q: Queryable, id: string): Promise<void> {
  await q.query('SELECT pg_advisory_xact_lock(hashtextextended($1, $2))', [id, FACTORY_LOCK_SEED]);
}

export async function recordSourceFailure(q: Queryable, id: string, failure: SourceFailure | null): Promise<void> {
  await q.query(
    'UPDATE factories SET source_error = $2::jsonb, fetched_at = CASE WHEN $2::jsonb IS NULL THEN ay_now() ELSE fetched_at END WHERE id = $1',
    [id, failure === null ? null : JSON.stringify(failure)],
  );
}

export async function markRevisionApplied(
  q: Queryable,
  id: string,
  r: {
    revision: string;
    definition: FactoryDefinition | null;
    liveChanged: boolean;
    message: string;
    warnings: Diagnostic[];
  },
): Promise<void> {
  await q.query(
    `UPDATE factories SET state = 'applied', reason = 'Applied', message = $3, errors = $4,
       attempted_revision = $2, attempted_at = ay_now(),
       applied_revision = $2, applied_at = CASE WHEN applied_revision IS DISTINCT FROM $2 OR $6 THEN ay_now() ELSE applied_at END,
       definition = COALESCE($5, definition),
       generation = generation + CASE WHEN $6 THEN 1 ELSE 0 END,
       updated_at = ay_now()
     WHERE id = $1`,
    [
      id,
      r.revision,
      r.message,
      JSON.stringify(r.warnings),
      r.definition === null ? null : JSON.stringify(r.definition),
      r.liveChanged,
    ],
  );
}

export async function markRevisionFailed(
  q: Queryable,
  id: string,
  r: { revision: string; reason: RevisionReason; message: string; errors: Diagnostic[] },
): Promise<void> {
  await q.query(
    `UPDATE factories SET state = 'failed', reason = $3, message = $4, errors = $5,
       attempted_revision = $2, attempted_at = ay_now(), updated_at = ay_now()
     WHERE id = $1`,
    [id, r.revision, r.reason, r.message, JSON.stringify(r.errors)],
  );
}

// ------------------------------------------------------------------ history

export interface ApplyRow {
  id: string;
  factory_id: string;
  revision: string;
  commit_author: string | null;
  commit_message: string | null;
  commit_sha: string | null;
  committed_at: Date | null;
  trigger: string | null;
  result: Exclude<ApplyResult, 'skipped' | 'none'>;
  reason: string | null;
  message: string | null;
  errors: Diagnostic[];
  warnings: PlanWarning[];
  changes: Change[];
  started_at: Date;
  finished_at: Date;
}

export async function insertApply(
  q: Queryable,
  a: Omit<ApplyRow, 'finished_at' | 'started_at'> & { started_at: Date },
): Promise<ApplyRow> {
  const res = await q.query<ApplyRow>(
    `INSERT INTO factory_applies (id, factory_id, revision, commit_author, commit_message, commit_sha, committed_at, trigger, result,
       reason, message, errors, warnings, changes, started_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING *`,
    [
      a.id,
      a.factory_id,
      a.revision,
      a.commit_author,
      a.commit_message,
      a.commit_sha,
      a.committed_at,
      a.trigger,
      a.result,
      a.reason,
      a.message,
      JSON.stringify(a.errors),
      JSON.stringify(a.warnings),
      JSON.stringify(a.changes),
      a.started_at,
    ],
  );
  return res.rows[0]!;
}

/** Newest first, after the keyset cursor. */
export async function listApplies(
  q: Queryable,
  factoryId: string,
  limit: number,
  before?: { startedAt: string; id: string },
): Promise<ApplyRow[]> {
  const params: (string | number)[] = [factoryId];
  let where = 'factory_id = $1';
  if (before) {
    params.push(before.startedAt, before.id);
    where += ' AND (started_at, id) < ($2::timestamptz, $3)';
  }
  params.push(limit);
  const res = await q.query<ApplyRow>(
    `SELECT * FROM factory_applies WHERE ${where} ORDER BY started_at DESC, id DESC LIMIT $${params.length}`,
    params,
  );
  return res.rows;
}

// ------------------------------------------------------------------ live state

export async function listFactoryWebhooks(
  q: Queryable,
  factoryId: string,
  options: { includeDeleted: boolean },
): Promise<WebhookRow[]> {
  const res = await q.query<WebhookRow>(
    `SELECT * FROM webhooks WHERE factory_id = $1 ${options.includeDeleted ? '' : 'AND deleted_at IS NULL'} ORDER BY name, created_at`,
    [factoryId],
  );
  return res.rows;
}

export async function listFactoryAutomations(q: Queryable, factoryId: string): Promise<AutomationRow[]> {
  const res = await q.query<AutomationRow>(
    'SELECT * FROM automations WHERE factory_id = $1 AND deleted_at IS NULL ORDER BY name',
    [factoryId],
  );
  return res.rows;
}

/** The columns of a webhook row the reconciler writes from its file (a field the definition gains is not one). */
export type WebhookValues = Pick<
  WebhookDefinition,
  'name' | 'file' | 'authMode' | 'signatureScheme' | 'secretName' | 'deliveryIdHeader' | 'enabled'
>;

export async function insertWebhook(
  q: Queryable,
  w: WebhookValues & { uid: string; teamId: string; factoryId: string; secretCiphertext: Buffer },
): Promise<void> {
  await q.query(
    `INSERT INTO webhooks (uid, team_id, factory_id, name, file, auth_mode, signature_scheme, secret_name, secret_ciphertext, delivery_id_header, enabled)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
    [
      w.uid,
      w.teamId,
      w.factoryId,
      w.name,
      w.file,
      w.authMode,
      w.signatureScheme,
      w.secretName,
      w.secretCiphertext,
      w.deliveryIdHeader,
      w.enabled,
    ],
  );
}

/** Updates a live webhook; a new secret value (ciphertext given) bumps `secret_version`. */
export async function updateWebhook(
  q: Queryable,
  uid: string,
  w: WebhookValues,
  secretCiphertext: Buffer | null,
): Promise<void> {
  await q.query(
    `UPDATE webhooks SET file = $2, auth_mode = $3, signature_scheme = $4, secret_name = $5, delivery_id_header = $6, enabled = $7,
       secret_ciphertext = COALESCE($8, secret_ciphertext),
       secret_version = secret_version + CASE WHEN $8::bytea IS NULL THEN 0 ELSE 1 END,
       updated_at = ay_now()
     WHERE uid = $1 AND deleted_at IS NULL`,
    [uid, w.file, w.authMode, w.signatureScheme, w.secretName, w.deliveryIdHeader, w.enabled, secretCiphertext],
  );
}

export async function softDeleteWebhook(q: Queryable, uid: string): Promise<void> {
  await q.query(
    'UPDATE webhooks SET deleted_at = ay_now(), updated_at = ay_now() WHERE uid = $1 AND deleted_at IS NULL',
    [uid],
  );
}

/** The columns an apply writes. */
export type AutomationValues = Pick<
  AutomationRow,
  'name' | 'file' | 'enabled' | 'prompt' | 'agent' | 'config' | 'triggers'
>;

export async function insertAutomation(
  q: Queryable,
  a: AutomationValues & { id: string; teamId: string; factoryId: string },
): Promise<void> {
  await q.query(
    `INSERT INTO automations (id, team_id, factory_id, name, file, enabled, prompt, agent, config, triggers)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [
      a.id,
      a.teamId,
      a.factoryId,
      a.name,
      a.file,
      a.enabled,
      a.prompt,
      a.agent,
      JSON.stringify(a.config),
      JSON.stringify(a.triggers),
    ],
  );
}

export async function updateAutomation(q: Queryable, id: string, a: AutomationValues): Promise<void> {
  await q.query(
    `UPDATE automations SET file = $2, enabled = $3, prompt = $4, agent = $5, config = $6, triggers = $7, updated_at = ay_now()
     WHERE id = $1 AND deleted_at IS NULL`,
    [id, a.file, a.enabled, a.prompt, a.agent, JSON.stringify(a.config), JSON.stringify(a.triggers)],
  );
}

export async function softDeleteAutomation(q: Queryable, id: string): Promise<void> {
  await q.query('DELETE FROM automation_webhook_triggers WHERE automation_id = $1', [id]);
  await q.query(
    'UPDATE automations SET deleted_at = ay_now(), updated_at = ay_now() WHERE id = $1 AND deleted_at IS NULL',
    [id],
  );
}

export interface WebhookTriggerRow {
  webhookUid: string;
  triggerIndex: number;
  payloadFilter: Record<string, unknown> | null;
}

export async function replaceAutomationTriggers(
  q: Queryable,
  automationId: string,
  triggers: readonly WebhookTriggerRow[],
): Promise<void> {
  await q.query('DELETE FROM automation_webhook_triggers WHERE automation_id = $1', [automationId]);
  for (const t of triggers) {
    await q.query(
      'INSERT INTO automation_webhook_triggers (automation_id, webhook_uid, trigger_index, payload_filter) VALUES ($1, $2, $3, $4)',
      [automationId, t.webhookUid, t.triggerIndex, t.payloadFilter === null ? null : JSON.stringify(t.payloadFilter)],
    );
  }
}

// ------------------------------------------------------------------ files

export async function replaceFactoryFiles(
  q: Queryable,
  factoryId: string,
  files: readonly FactoryFileInput[],
): Promise<void> {
  await q.query('DELETE FROM factory_files WHERE factory_id = $1', [factoryId]);
  const real = files.filter((f) => !f.symlink);
  // In slices: one statement per file would make a 1,000-file apply slow on the embedded engine.
  for (let i = 0; i < real.length; i += 500) {
    const slice = real.slice(i, i + 500);
    await q.query(
      'INSERT INTO factory_files (factory_id, path, content) SELECT $1, p, c FROM unnest($2::text[], $3::text[]) AS t(p, c)',
      [factoryId, slice.map((f) => f.path), slice.map((f) => f.content)],
    );
  }
}

export async function listFactoryFiles(q: Queryable, factoryId: string): Promise<FactoryFileInput[]> {
  const res = await q.query<{ path: string; content: string }>(
    'SELECT path, content FROM factory_files WHERE factory_id = $1 ORDER BY path',
    [factoryId],
  );
  return res.rows;
}

/** Keeps the files of `revision`, refused for its definition's errors, in place of the factory's previous refusal. */
export async function replaceRefusedFiles(
  q: Queryable,
  factoryId: string,
  revision: string,
  files: readonly FactoryFileInput[],
): Promise<void> {
  await q.query('DELETE FROM factory_refused_files WHERE factory_id = $1', [factoryId]);
  const real = files.filter((f) => !f.symlink);
  for (let i = 0; i < real.length; i += 500) {
    const slice = real.slice(i, i + 500);
    await q.query(
      `INSERT INTO factory_refused_files (factory_id, revision, path, content)
       SELECT $1, $2, p, c FROM unnest($3::text[], $4::text[]) AS t(p, c)`,
      [factoryId, revision, slice.map((f) => f.path), slice.map((f) => f.content)],
    );
  }
}

/** The files of a revision of the factory: the applied one's, or the kept refused one's; undefined for any other. */
export async function revisionFiles(
  q: Queryable,
  factory: { id: string; applied_revision: string | null },
  revision: string,
): Promise<FactoryFileInput[] | undefined> {
  if (revision === factory.applied_revision) return listFactoryFiles(q, factory.id);
  const res = await q.query<{ path: string; content: string }>(
    'SELECT path, content FROM factory_refused_files WHERE factory_id = $1 AND revision = $2 ORDER BY path',
    [factory.id, revision],
  );
  return res.rows.length > 0 ? res.rows : undefined;
}

export interface FactoryCounts {
  webhooks: number;
  automations: number;
  schedules: number;
}

/** Live webhooks, automations and schedules of each factory, in one round trip. */
export async function countFactoryResources(
  q: Queryable,
  factoryIds: readonly string[],
): Promise<Map<string, FactoryCounts>> {
  const counts = new Map<string, FactoryCounts>(
    factoryIds.map((id) => [id, { webhooks: 0, automations: 0, schedules: 0 }]),
  );
  if (factoryIds.length === 0) return counts;
  const res = await q.query<{ factory_id: string; kind: keyof FactoryCounts; n: number }>(
    `SELECT factory_id, 'webhooks' AS kind, count(*)::int AS n FROM webhooks
       WHERE factory_id = ANY($1::text[]) AND deleted_at IS NULL GROUP BY factory_id
     UNION ALL
     SELECT factory_id, 'automations', count(*)::int FROM automations
       WHERE factory_id = ANY($1::text[]) AND deleted_at IS NULL GROUP BY factory_id
     UNION ALL
     SELECT factory_id, 'schedules', count(*)::int FROM schedules
       WHERE factory_id = ANY($1::text[]) GROUP BY factory_id`,
    [factoryIds as string[]],
  );
  for (const row of res.rows) {
    const entry = counts.get(row.factory_id);
    if (entry) entry[row.kind] = row.n;
  }
  return counts;
}

// ---- the provider trigger index (provider-trigger-index.ts) ----

/** Replaces a factory's rows of the index (in the apply's transaction). */
export async function replaceFactoryProviderTriggers(
  q: Queryable,
  factoryId: string,
  rows: readonly ProviderTriggerRow[],
): Promise<void> {
  await q.query('DELETE FROM automation_provider_triggers WHERE factory_id = $1', [factoryId]);
  if (rows.length === 0) return;
  await q.query(
    `INSERT INTO automation_provider_triggers (automation_id, team_id, factory_id, provider, event, trigger_index, repository, filter)
     SELECT r.automation_id, r.team_id, r.factory_id, r.provider, r.event, r.trigger_index, r.repository, r.filter
       FROM json_to_recordset($1::json) AS r(automation_id text, team_id text, factory_id text, provider text, event text,
                                             trigger_index int4, repository text, filter jsonb)
     ON CONFLICT DO NOTHING`,
    [
      JSON.stringify(
        rows.map((r) => ({
          automation_id: r.automationId,
          team_id: r.teamId,
          factory_id: r.factoryId,
          provider: r.provider,
          event: r.event,
          trigger_index: r.triggerIndex,
          repository: r.repository,
          filter: r.filter,
        })),
      ),
    ],
  );
}

export async function liveAutomationIds(q: Queryable, factoryId: string): Promise<Map<string, string>> {
  const res = await q.query<{ id: string; name: string }>(
    'SELECT id, name FROM automations WHERE factory_id = $1 AND deleted_at IS NULL',
    [factoryId],
  );
  return new Map(res.rows.map((r) => [r.name, r.id]));
}

/** The applied definitions of the team's factories, or of one of them. */
export async function appliedDefinitions(
  q: Queryable,
  teamId: string,
  factoryId?: string,
): Promise<FactoryDefinition[]> {
  const res = await q.query<{ definition: FactoryDefinition }>(
    `SELECT definition FROM factories WHERE team_id = $1 AND definition IS NOT NULL${factoryId ? ' AND id = $2' : ''}`,
    factoryId ? [teamId, factoryId] : [teamId],
  );
  return res.rows.map((r) => r.definition);
}

/** The team a factory named by path at start-up goes to: `default`, else the oldest. */
export async function startupTeamId(q: Queryable): Promise<string | undefined> {
  const teams = await q.query<{ id: string }>(
    "SELECT id FROM teams ORDER BY (name = 'default') DESC, created_at LIMIT 1",
  );
  return teams.rows[0]?.id;
}
