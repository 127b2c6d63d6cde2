/** SQL of the delivery log (migration 0020), as functions. The group-commit writer is the only caller of the inserts. */
import type { Queryable, SqlValue } from '../store/db.ts';
import type { IdentitySource } from './identity.ts';

export type DeliveryLabelCode = 'accepted' | 'duplicate' | 'rejected_auth' | 'rejected_invalid_json' | 'rejected_too_large';

/** The labels as the spec names them. */
export const DELIVERY_LABELS = {
  accepted: 'Accepted',
  duplicate: 'Duplicate',
  rejected_auth: 'Rejected (auth)',
  rejected_invalid_json: 'Rejected (invalid JSON)',
  rejected_too_large: 'Rejected (too large)',
} as const satisfies Record<DeliveryLabelCode, string>;

export interface DeliveryInsert {
  id: string;
  webhookUid: string;
  teamId: string;
  factoryId: string;
  webhookName: string;
  label: DeliveryLabelCode;
  identity: string | null;
  identitySource: IdentitySource | null;
  senderDeliveryId: string | null;
  duplicateOf: string | null;
  size: number;
  receivedAt: Date;
  payload: Buffer | null;
  headers: Record<string, string>;
  reason: string | null;
  senderIp: string | null;
}

const COLUMNS: readonly (readonly [string, string, (d: DeliveryInsert) => SqlValue])[] = [
  ['id', 'text', (d) => d.id],
  ['webhook_uid', 'text', (d) => d.webhookUid],
  ['team_id', 'text', (d) => d.teamId],
  ['factory_id', 'text', (d) => d.factoryId],
  ['webhook_name', 'text', (d) => d.webhookName],
  ['label', 'text', (d) => d.label],
  ['identity', 'text', (d) => d.identity],
  ['identity_source', 'text', (d) => d.identitySource],
  ['sender_delivery_id', 'text', (d) => d.senderDeliveryId],
  ['duplicate_of', 'text', (d) => d.duplicateOf],
  ['size', 'int4', (d) => d.size],
  ['received_at', 'timestamptz', (d) => d.receivedAt],
  ['payload', 'bytea', (d) => d.payload],
  ['headers', 'jsonb', (d) => JSON.stringify(d.headers)],
  ['reason', 'text', (d) => d.reason],
  ['sender_ip', 'text', (d) => d.senderIp],
  // An accepted delivery enters the outbox in the same statement that logs it.
  ['outbox_pending', 'bool', (d) => d.label === 'accepted'],
];

const sqlCache = new Map<string, string>();

/** `INSERT … VALUES (…), (…)` for `rows` rows: one statement for a whole group commit. */
function insertSql(rows: number, accepted: boolean): string {
  const cacheKey = `${rows}:${accepted}`;
  let sql = sqlCache.get(cacheKey);
  if (sql) return sql;
  const tuples: string[] = [];
  for (let r = 0; r < rows; r++) {
    tuples.push(`(${COLUMNS.map(([, type], c) => `$${r * COLUMNS.length + c + 1}::${type}`).join(', ')})`);
  }
  sql = `INSERT INTO webhook_deliveries (${COLUMNS.map(([name]) => name).join(', ')}) VALUES ${tuples.join(', ')}`;
  if (accepted) sql += ` ON CONFLICT (webhook_uid, identity) WHERE label = 'accepted' DO NOTHING RETURNING id`;
  sqlCache.set(cacheKey, sql);
  return sql;
}

function params(rows: readonly DeliveryInsert[]): SqlValue[] {
  const values: SqlValue[] = [];
  for (const row of rows) for (const [, , get] of COLUMNS) values.push(get(row));
  return values;
}

/** Inserts accepted deliveries; answers the ids that were new (the others repeat an accepted identity). */
export async function insertAccepted(q: Queryable, rows: readonly DeliveryInsert[]): Promise<Set<string>> {
  if (rows.length === 0) return new Set();
  const res = await q.query<{ id: string }>(insertSql(rows.length, true), params(rows));
  return new Set(res.rows.map((r) => r.id));
}

export async function insertLogged(q: Queryable, rows: readonly DeliveryInsert[]): Promise<void> {
  if (rows.length === 0) return;
  await q.query(insertSql(rows.length, false), params(rows));
}

/**
 * The live webhooks among `uids` with their secret version, share-locked until the transaction ends: a
 * disable, delete or rotation waits for the deliveries being committed, and none is accepted after it.
 */
export async function lockLiveWebhooks(q: Queryable, uids: readonly string[]): Promise<Map<string, number>> {
  if (uids.length === 0) return new Map();
  const res = await q.query<{ uid: string; secret_version: number }>(
    'SELECT uid, secret_version FROM webhooks WHERE uid = ANY($1::text[]) AND enabled AND deleted_at IS NULL ORDER BY uid FOR SHARE',
    [uids],
  );
  return new Map(res.rows.map((r) => [r.uid, r.secret_version]));
}

/** Accepted deliveries holding any of these (webhook, identity) keys. */
export async function findAccepted(q: Queryable, keys: readonly { webhookUid: string; identity: string }[]): Promise<Map<string, string>> {
  if (keys.length === 0) return new Map();
  const res = await q.query<{ id: string; webhook_uid: string; identity: string }>(
    `SELECT d.id, d.webhook_uid, d.identity FROM webhook_deliveries d
       JOIN unnest($1::text[], $2::text[]) AS k(webhook_uid, identity) ON d.webhook_uid = k.webhook_uid AND d.identity = k.identity
      WHERE d.label = 'accepted'`,
    [keys.map((k) => k.webhookUid), keys.map((k) => k.identity)],
  );
  return new Map(res.rows.map((r) => [identityKey(r.webhook_uid, r.identity), r.id]));
}

export function identityKey(webhookUid: string, identity: string): string {
  return `${webhookUid}\u0000${identity}`;
}
