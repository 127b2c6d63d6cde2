/** SQL of the delivery log (migration 0020), as functions. The group-commit writer is the only caller of the inserts. */
import { int4Array, textArray, timestamptzArray } from '../store/binary-arrays.ts';
import type { Queryable, QueryResult, SqlValue } from '../kernel/db.ts';
import { DELIVERY_KEY_BYTES, deliveryKey } from './identity.ts';
import type { IdentitySource } from './identity.ts';

export type DeliveryLabelCode =
  | 'accepted'
  | 'duplicate'
  | 'rejected_auth'
  | 'rejected_invalid_json'
  | 'rejected_too_large';

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
  /** The provider of a connection's delivery; absent for a custom webhook's. */
  provider?: string | null;
}

/** Where a delivery came in, who sent it and what it weighs: what every delivery-log row starts from. */
export type ReceivedDelivery = Pick<
  DeliveryInsert,
  'id' | 'webhookUid' | 'teamId' | 'factoryId' | 'webhookName' | 'size' | 'receivedAt' | 'headers' | 'senderIp'
> & { provider?: string };

/** A delivery-log row of `received`, nothing decided yet: accepted, no identity, no payload, no reason. */
export function deliveryRow(received: ReceivedDelivery): DeliveryInsert {
  return {
    ...received,
    label: 'accepted',
    identity: null,
    identitySource: null,
    senderDeliveryId: null,
    duplicateOf: null,
    payload: null,
    reason: null,
  };
}

/** Each column: its name, its type in the JSON row set, and its value for a row. */
const COLUMNS: readonly (readonly [string, string, (d: DeliveryInsert) => unknown])[] = [
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
  ['received_at', 'timestamptz', (d) => d.receivedAt.toISOString()],
  ['headers', 'jsonb', (d) => d.headers],
  ['reason', 'text', (d) => d.reason],
  ['sender_ip', 'text', (d) => d.senderIp],
  ['provider', 'text', (d) => d.provider ?? null],
];

const NAMES = COLUMNS.map(([name]) => name).join(', ');
const VALUES = COLUMNS.map(([name]) => `r.${name}`).join(', ');
const RECORD = COLUMNS.map(([name, type]) => `${name} ${type}`).join(', ');

// Rows travel as ONE parameter, a JSON array unpacked by json_to_recordset. A multi-row VALUES list would bind
// 15 parameters per row, and PGlite builds every text parameter in JavaScript: one JSON text is several times
// cheaper on the embedded engine, no worse on PostgreSQL.
function rowsJson(rows: readonly DeliveryInsert[]): string {
  return JSON.stringify(rows.map((row) => Object.fromEntries(COLUMNS.map(([name, , get]) => [name, get(row)]))));
}

/**
 * Logs deliveries that are not accepted (duplicates and rejections): metadata only (a payload is kept for
 * accepted deliveries alone, by acceptDeliveries), never in the outbox.
 */
export async function insertLogged(q: Queryable, rows: readonly DeliveryInsert[]): Promise<void> {
  if (rows.length === 0) return;
  await q.query(
    `INSERT INTO webhook_deliveries (${NAMES}) SELECT ${VALUES} FROM json_to_recordset($1::json) AS r(${RECORD})`,
    [rowsJson(rows)],
  );
}

export interface AcceptResult {
  /** IDs of the rows inserted as Accepted. */
  accepted: Set<string>;
  /** The webhooks still live when the statement ran: secret version, and whether automations subscribe. */
  live: Map<string, { secretVersion: number; subscribed: boolean }>;
}

/** A delivery to accept: an Accepted row always has its identity and its payload. */
export type AcceptInsert = DeliveryInsert & { identity: string; payload: Buffer };

/** A group to accept: each delivery with the secret version it authenticated against. */
export type AcceptGroup = readonly { row: AcceptInsert; secretVersion: number }[];

/**
 * The columns of an accepted row, each an array parameter in binary format (src/store/binary-arrays.ts), unnested
 * side by side in the order of the group; the rest come from the webhook's row. The payloads are one more
 * parameter, all of them end to end, each row's cut out at its offset, and so are the dedupe keys ($15,
 * DELIVERY_KEY_BYTES each).
 */
const ACCEPT_ROWS = `unnest($1::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[], $9::text[], $10::text[],
                $11::int4[], $12::int4[], $13::int4[], $14::int4[])
         WITH ORDINALITY AS r(id, webhook_uid, identity, identity_source, sender_delivery_id, received_at, headers, sender_ip,
                              secret_version, size, payload_at, payload_length, n)`;

/**
 * The group's webhooks and provider connections still live as the statement runs, share-locked until it
 * commits (see acceptDeliveries). A connection's deliveries always enter the outbox: which automations they
 * reach depends on the event (src/automations/provider-runs.ts).
 */
const LIVE_WEBHOOKS = `live_w AS (SELECT w.uid, w.team_id, w.factory_id, w.name, w.secret_version,
              EXISTS (SELECT 1 FROM automation_webhook_triggers t JOIN automations a ON a.id = t.automation_id
                       WHERE t.webhook_uid = w.uid AND a.enabled AND a.deleted_at IS NULL) AS subscribed, NULL::text AS provider
         FROM webhooks w WHERE w.uid = ANY($2::text[]) AND w.enabled AND w.deleted_at IS NULL ORDER BY w.uid FOR SHARE OF w),
   live_c AS (SELECT c.id AS uid, c.team_id, '' AS factory_id, c.provider AS name, c.secret_version, true AS subscribed, c.provider
         FROM integration_connections c WHERE c.id = ANY($2::text[]) ORDER BY c.id FOR SHARE OF c),
   live AS (SELECT * FROM live_w UNION ALL SELECT * FROM live_c)`;

/** Inserts the rows of `source` (as r) whose webhook is in `live` with the secret version they authenticated against. */
const insertAccepted = (
  source: string,
): string => `INSERT INTO webhook_deliveries (id, webhook_uid, team_id, factory_id, webhook_name, label, identity, identity_key, identity_source,
                                       sender_delivery_id, size, received_at, payload, headers, sender_ip, outbox_pending, provider)
       SELECT r.id, r.webhook_uid, live.team_id, live.factory_id, live.name, 'accepted', r.identity,
              substring($15::bytea FROM ((r.n - 1) * ${DELIVERY_KEY_BYTES} + 1)::int4 FOR ${DELIVERY_KEY_BYTES}), r.identity_source,
              r.sender_delivery_id, r.size, r.received_at, substring($3::bytea FROM r.payload_at FOR r.payload_length), r.headers::jsonb,
              r.sender_ip, live.subscribed, live.provider
         FROM ${source}
         JOIN live ON live.uid = r.webhook_uid AND live.secret_version = r.secret_version
        ORDER BY r.n`;

/** acceptDeliveries: any group; a repeat is refused by `ON CONFLICT` and named in the answer. */
const ACCEPT_ANY = `WITH ${LIVE_WEBHOOKS},
   r AS (SELECT * FROM ${ACCEPT_ROWS}),
   ins AS (${insertAccepted('r')}
     ON CONFLICT (identity_key) WHERE label = 'accepted' DO NOTHING
     RETURNING id
   )
   SELECT 'refused' AS kind, id AS value, NULL::int4 AS secret_version, NULL::bool AS subscribed FROM r
    WHERE id NOT IN (SELECT id FROM ins)
   UNION ALL SELECT 'live', uid, secret_version, subscribed FROM live`;

/** acceptNewDeliveries: a group that repeats nothing; a repeat fails the statement. */
const ACCEPT_NEW = `WITH ${LIVE_WEBHOOKS},
     ins AS (${insertAccepted(ACCEPT_ROWS)})
     SELECT uid, secret_version, subscribed FROM live`;

/**
 * The parameters of both accept statements: the rows' columns as binary arrays (ACCEPT_ROWS), the group's
 * webhooks, and the payloads as ONE bytea parameter in binary format, end to end: the server copies bytes
 * instead of lexing them out of text, a large share of the statement's cost (docs/decisions.md). The dedupe
 * keys likewise, last.
 */
function acceptParams(group: AcceptGroup): SqlValue[] {
  const rows = group.map((g) => g.row);
  const offsets: number[] = [];
  let payloadAt = 1; // substring() counts from 1
  for (const row of rows) {
    offsets.push(payloadAt);
    payloadAt += row.payload.length;
  }
  return [
    textArray(rows.map((r) => r.id)),
    [...new Set(rows.map((r) => r.webhookUid))].sort(),
    Buffer.concat(rows.map((r) => r.payload)),
    textArray(rows.map((r) => r.webhookUid)),
    textArray(rows.map((r) => r.identity)),
    textArray(rows.map((r) => r.identitySource)),
    textArray(rows.map((r) => r.senderDeliveryId)),
    timestamptzArray(rows.map((r) => r.receivedAt)),
    textArray(rows.map((r) => JSON.stringify(r.headers))),
    textArray(rows.map((r) => r.senderIp)),
    int4Array(group.map((g) => g.secretVersion)),
    int4Array(rows.map((r) => r.size)),
    int4Array(offsets),
    int4Array(rows.map((r) => r.payload.length)),
    Buffer.concat(rows.map((r) => deliveryKey(r.webhookUid, r.identity))),
  ];
}

type LiveRow = { uid: string; secret_version: number; subscribed: boolean };

function liveMap(rows: readonly LiveRow[]): AcceptResult['live'] {
  return new Map(rows.map((r) => [r.uid, { secretVersion: r.secret_version, subscribed: r.subscribed }]));
}

/**
 * Accepts a group of deliveries in ONE statement (atomic on its own, one round trip):
 * - the webhooks are share-locked while it runs, so a disable, delete or rotation waits for it, and a
 *   delivery whose webhook is no longer live, or whose secret changed since it authenticated, is not taken;
 * - the unique index on (webhook_uid, identity) of accepted rows decides Accepted (inserted) or a repeat;
 * - a delivery enters the outbox in the same statement when an enabled automation subscribes to its webhook,
 *   so it is evaluated against exactly the automations in force when it was accepted.
 * Rows are inserted in the given order; sorted by (webhook_uid, identity), concurrent statements take the
 * unique-index locks in one order and cannot deadlock. The statement answers only the deliveries it did NOT
 * insert, which is none in the common case, and the live webhooks.
 */
export async function acceptDeliveries(q: Queryable, rows: AcceptGroup): Promise<AcceptResult> {
  if (rows.length === 0) return { accepted: new Set(), live: new Map() };
  const res = await q.query<{
    kind: 'refused' | 'live';
    value: string;
    secret_version: number | null;
    subscribed: boolean | null;
  }>(ACCEPT_ANY, acceptParams(rows));
  const refused = new Set<string>();
  const live: LiveRow[] = [];
  for (const r of res.rows) {
    if (r.kind === 'refused') refused.add(r.value);
    else live.push({ uid: r.value, secret_version: r.secret_version!, subscribed: r.subscribed! });
  }
  return { accepted: new Set(rows.map((r) => r.row.id).filter((id) => !refused.has(id))), live: liveMap(live) };
}

/** The unique index that makes a repeated (webhook, identity) a duplicate: on its deliveryKey (migration 0093). */
export const IDENTITY_INDEX = 'webhook_deliveries_identity';

/**
 * acceptDeliveries for a group none of whose deliveries repeats an accepted one, which is the common case and
 * costs the database about a quarter less: a plain insert, without `ON CONFLICT`'s second look into the
 * identity index or the list of refused rows. A repeat fails the whole statement with a unique violation on
 * IDENTITY_INDEX, having written nothing; the caller then accepts the group with acceptDeliveries. Which rows
 * were inserted follows from the live webhooks the statement answers, since every row it joined was inserted.
 */
export async function acceptNewDeliveries(q: Queryable, rows: AcceptGroup): Promise<AcceptResult> {
  if (rows.length === 0) return { accepted: new Set(), live: new Map() };
  const res = await q.query<LiveRow>(ACCEPT_NEW, acceptParams(rows));
  const live = liveMap(res.rows);
  const accepted = new Set<string>();
  for (const { row, secretVersion } of rows)
    if (live.get(row.webhookUid)?.secretVersion === secretVersion) accepted.add(row.id);
  return { accepted, live };
}

/** Accepted deliveries holding any of these (webhook, identity) keys. */
export async function findAccepted(
  q: Queryable,
  keys: readonly { webhookUid: string; identity: string }[],
): Promise<Map<string, string>> {
  if (keys.length === 0) return new Map();
  const res = await q.query<{ id: string; webhook_uid: string; identity: string }>(
    `SELECT d.id, d.webhook_uid, d.identity FROM webhook_deliveries d
       JOIN generate_series(0, $2::int4 - 1) AS k(i)
         ON d.identity_key = substring($1::bytea FROM k.i * ${DELIVERY_KEY_BYTES} + 1 FOR ${DELIVERY_KEY_BYTES})
      WHERE d.label = 'accepted'`,
    [Buffer.concat(keys.map((k) => deliveryKey(k.webhookUid, k.identity))), keys.length],
  );
  return new Map(res.rows.map((r) => [identityKey(r.webhook_uid, r.identity), r.id]));
}

export function identityKey(webhookUid: string, identity: string): string {
  return `${webhookUid}\u0000${identity}`;
}

// ---- the routing snapshot (routing.ts) ----

export interface WebhookRouteRow {
  uid: string;
  team_id: string;
  factory_id: string;
  name: string;
  auth_mode: 'token' | 'url_token' | 'signature';
  signature_scheme: string | null;
  secret_ciphertext: Uint8Array | null;
  secret_version: number;
  delivery_id_header: string | null;
}

const SELECT_LIVE = `SELECT uid, team_id, factory_id, name, auth_mode, signature_scheme, secret_ciphertext, secret_version, delivery_id_header
  FROM webhooks WHERE deleted_at IS NULL AND enabled`;

/** The live webhooks (enabled, not deleted): all, one factory's, or one. */
export function liveWebhookRoutes(
  q: Queryable,
  only: { factoryId: string } | { uid: string } | undefined = undefined,
): Promise<QueryResult<WebhookRouteRow>> {
  if (only === undefined) return q.query<WebhookRouteRow>(SELECT_LIVE);
  if ('factoryId' in only) return q.query<WebhookRouteRow>(`${SELECT_LIVE} AND factory_id = $1`, [only.factoryId]);
  return q.query<WebhookRouteRow>(`${SELECT_LIVE} AND uid = $1`, [only.uid]);
}

// ---- retention (retention.ts) ----

/**
 * Deletes up to `chunk` deliveries beyond both retention floors of their webhook (received before `cutoff` and
 * not among its latest `keep`, not waiting in the outbox), with their firings; answers how many went.
 */
export async function purgeDeliveryChunk(q: Queryable, cutoff: Date, keep: number, chunk: number): Promise<number> {
  const res = await q.query<{ n: number }>(
    `WITH RECURSIVE hooks AS (
         (SELECT webhook_uid FROM webhook_deliveries ORDER BY webhook_uid LIMIT 1)
         UNION ALL
         SELECT (SELECT d.webhook_uid FROM webhook_deliveries d WHERE d.webhook_uid > h.webhook_uid ORDER BY d.webhook_uid LIMIT 1)
           FROM hooks h WHERE h.webhook_uid IS NOT NULL
       ), floor AS (
         SELECT h.webhook_uid, f.received_at, f.id
           FROM hooks h
           CROSS JOIN LATERAL (
             SELECT d.received_at, d.id FROM webhook_deliveries d
              WHERE d.webhook_uid = h.webhook_uid
              ORDER BY d.received_at DESC, d.id DESC OFFSET $2::int - 1 LIMIT 1
           ) f
          WHERE h.webhook_uid IS NOT NULL
       ), doomed AS (
         SELECT o.id
           FROM floor
           CROSS JOIN LATERAL (
             SELECT d.id FROM webhook_deliveries d
              WHERE d.webhook_uid = floor.webhook_uid AND d.received_at < $1 AND (d.received_at, d.id) < (floor.received_at, floor.id)
                AND NOT d.outbox_pending
              ORDER BY d.received_at, d.id LIMIT $3
           ) o
          LIMIT $3
       ), gone AS (
         DELETE FROM webhook_deliveries d USING doomed WHERE d.id = doomed.id RETURNING d.id
       ), unlinked AS (
         DELETE FROM automation_firings f USING gone WHERE f.delivery_id = gone.id
       )
       SELECT count(*)::int AS n FROM gone`,
    [cutoff, keep, chunk],
  );
  return res.rows[0]?.n ?? 0;
}

/**
 * Logs a replay of the accepted delivery `originalId` of the log `logUid` as a new accepted delivery `id`, in the
 * outbox: the original's payload, headers and sender, received now, naming the original and who replayed it. Its
 * identity is its own (`replay:<id>`), so the dedupe index never refuses it. Undefined when there is no such
 * accepted delivery with a stored payload.
 */
export async function insertReplay(
  q: Queryable,
  logUid: string,
  originalId: string,
  id: string,
  replayedBy: string,
): Promise<{ id: string } | undefined> {
  const res = await q.query<{ id: string }>(
    `INSERT INTO webhook_deliveries (id, webhook_uid, team_id, factory_id, webhook_name, label, identity, identity_key,
                                     identity_source, sender_delivery_id, size, received_at, payload, headers, sender_ip,
                                     outbox_pending, provider, replay_of, replayed_by)
     SELECT $3, o.webhook_uid, o.team_id, o.factory_id, o.webhook_name, 'accepted', 'replay:' || $3, $5::bytea, o.identity_source,
            o.sender_delivery_id, o.size, ay_now(), o.payload, o.headers, o.sender_ip, true, o.provider, o.id, $4
       FROM webhook_deliveries o
      WHERE o.webhook_uid = $1 AND o.id = $2 AND o.label = 'accepted' AND o.payload IS NOT NULL
     RETURNING id`,
    [logUid, originalId, id, replayedBy, deliveryKey(logUid, `replay:${id}`)],
  );
  return res.rows[0];
}
