/** Reading the delivery log (migration 0020): the newest first, one page at a time, and one delivery in full. */
import { AppError } from '../kernel/errors.ts';
import { DELIVERY_LABELS } from './sql.ts';
import type { DeliveryLabelCode } from './sql.ts';
import type { Queryable } from '../kernel/db.ts';

export interface DeliveryLogRow {
  id: string;
  webhook_uid: string;
  webhook_name: string;
  label: DeliveryLabelCode;
  identity_source: string | null;
  sender_delivery_id: string | null;
  duplicate_of: string | null;
  size: number;
  received_at: Date;
  reason: string | null;
  outbox_pending: boolean;
  evaluated_at: Date | null;
  replay_of: string | null;
  replayed_by: string | null;
}

export interface DeliveryFiring {
  automation_id: string;
  run_id: string | null;
  error: string | null;
  /** Why no run started although the trigger matched (the factory's trigger policy). */
  skipped: string | null;
}

export interface DeliveryItem {
  delivery_id: string;
  webhook_uid: string;
  /** As the spec names it: Accepted, Duplicate, Rejected (auth), Rejected (invalid JSON), Rejected (too large). */
  label: (typeof DELIVERY_LABELS)[DeliveryLabelCode];
  /** The same as a code. */
  status: DeliveryLabelCode;
  size: number;
  received_at: string;
  sender_delivery_id?: string;
  identity_source?: string;
  duplicate_of?: string;
  reason?: string;
  /** For a replay: the delivery it replays. */
  replay_of?: string;
  /** For a replay: the user or service account that asked for it. */
  replayed_by?: string;
  /** A provider event some automation matched but whose factory's trigger policy let start no run: why. */
  skipped_reasons?: string[];
}

const COLUMNS = `id, webhook_uid, webhook_name, label, identity_source, sender_delivery_id, duplicate_of, size, received_at, reason,
  outbox_pending, evaluated_at, replay_of, replayed_by`;

export function toDeliveryItem(row: DeliveryLogRow): DeliveryItem {
  return {
    delivery_id: row.id,
    webhook_uid: row.webhook_uid,
    label: DELIVERY_LABELS[row.label],
    status: row.label,
    size: row.size,
    received_at: row.received_at.toISOString(),
    ...(row.sender_delivery_id ? { sender_delivery_id: row.sender_delivery_id } : {}),
    ...(row.identity_source ? { identity_source: row.identity_source } : {}),
    ...(row.duplicate_of ? { duplicate_of: row.duplicate_of } : {}),
    ...(row.reason ? { reason: row.reason } : {}),
    ...(row.replay_of ? { replay_of: row.replay_of } : {}),
    ...(row.replayed_by ? { replayed_by: row.replayed_by } : {}),
  };
}

interface Cursor {
  t: string;
  i: string;
}

function encodeCursor(row: DeliveryLogRow): string {
  return Buffer.from(JSON.stringify({ t: row.received_at.toISOString(), i: row.id } satisfies Cursor)).toString(
    'base64url',
  );
}

function decodeCursor(text: string): Cursor {
  try {
    const cursor = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Cursor;
    if (typeof cursor.t === 'string' && typeof cursor.i === 'string' && !Number.isNaN(Date.parse(cursor.t)))
      return cursor;
  } catch {
    // fall through
  }
  throw new AppError('invalid_request', 'cursor is not a cursor this server issued');
}

/** Newest first (received_at, then id), keyset-paginated. */
export async function listDeliveries(
  q: Queryable,
  webhookUid: string,
  page: { limit: number; cursor?: string | undefined },
): Promise<{ rows: DeliveryLogRow[]; nextCursor: string | undefined }> {
  const params: (string | number | Date)[] = [webhookUid];
  let where = 'webhook_uid = $1';
  if (page.cursor) {
    const cursor = decodeCursor(page.cursor);
    params.push(new Date(cursor.t), cursor.i);
    where += ' AND (received_at, id) < ($2, $3)';
  }
  params.push(page.limit + 1);
  const res = await q.query<DeliveryLogRow>(
    `SELECT ${COLUMNS} FROM webhook_deliveries WHERE ${where} ORDER BY received_at DESC, id DESC LIMIT $${params.length}`,
    params,
  );
  const rows = res.rows.slice(0, page.limit);
  return { rows, nextCursor: res.rows.length > page.limit ? encodeCursor(rows.at(-1)!) : undefined };
}

export async function getDelivery(
  q: Queryable,
  webhookUid: string,
  deliveryId: string,
): Promise<DeliveryLogRow | undefined> {
  const res = await q.query<DeliveryLogRow>(
    `SELECT ${COLUMNS} FROM webhook_deliveries WHERE webhook_uid = $1 AND id = $2`,
    [webhookUid, deliveryId],
  );
  return res.rows[0];
}

/** The stored body of an accepted delivery (exact bytes), by delivery ID alone. */
export async function getDeliveryPayload(
  q: Queryable,
  deliveryId: string,
): Promise<{ webhook_uid: string; team_id: string; payload: Uint8Array } | undefined> {
  const res = await q.query<{ webhook_uid: string; team_id: string; payload: Uint8Array }>(
    "SELECT webhook_uid, team_id, payload FROM webhook_deliveries WHERE id = $1 AND label = 'accepted' AND payload IS NOT NULL",
    [deliveryId],
  );
  return res.rows[0];
}

export async function firingsOf(q: Queryable, deliveryId: string): Promise<DeliveryFiring[]> {
  const res = await q.query<DeliveryFiring>(
    'SELECT automation_id, run_id, error, skipped FROM automation_firings WHERE delivery_id = $1 ORDER BY created_at, automation_id',
    [deliveryId],
  );
  return res.rows;
}

export interface DeliveryCounts {
  deliveries: number;
  accepted: number;
  rejected: number;
}

/** Deliveries to the team's webhooks since a time, by the per-webhook log index. */
export async function countTeamDeliveries(q: Queryable, teamId: string, since: Date): Promise<DeliveryCounts> {
  const res = await q.query<{ deliveries: number; accepted: number; rejected: number }>(
    `SELECT count(*)::int AS deliveries,
            count(*) FILTER (WHERE label = 'accepted')::int AS accepted,
            count(*) FILTER (WHERE label LIKE 'rejected%')::int AS rejected
       FROM webhook_deliveries
      WHERE webhook_uid IN (SELECT uid FROM webhooks WHERE team_id = $1) AND received_at > $2`,
    [teamId, since],
  );
  return res.rows[0] ?? { deliveries: 0, accepted: 0, rejected: 0 };
}

/** Why the accepted deliveries among these started no run for some automation (trigger policies, concurrency keys), by delivery. */
async function skipsOf(q: Queryable, rows: readonly DeliveryLogRow[]): Promise<Map<string, string[]>> {
  const ids = rows.filter((r) => r.label === 'accepted').map((r) => r.id);
  const skips = new Map<string, string[]>();
  if (ids.length === 0) return skips;
  const res = await q.query<{ delivery_id: string; skipped: string }>(
    'SELECT DISTINCT delivery_id, skipped FROM automation_firings WHERE delivery_id = ANY($1::text[]) AND skipped IS NOT NULL ORDER BY delivery_id, skipped',
    [ids],
  );
  for (const row of res.rows) skips.set(row.delivery_id, [...(skips.get(row.delivery_id) ?? []), row.skipped]);
  return skips;
}

/**
 * One page of a delivery log (a webhook's, or a provider connection's) as the API answers it; `withSkips` also
 * says, per delivery, why an automation it matched started no run (docs/governance.md).
 */
export async function deliveryLogPage(
  q: Queryable,
  logUid: string,
  query: { limit?: number | undefined; cursor?: string | undefined },
  options: { withSkips?: boolean } = {},
): Promise<{ deliveries: DeliveryItem[]; page_info: { has_next_page: boolean; next_cursor?: string } }> {
  const page = await listDeliveries(q, logUid, { limit: query.limit ?? 50, cursor: query.cursor });
  const skips = options.withSkips ? await skipsOf(q, page.rows) : new Map<string, string[]>();
  return {
    deliveries: page.rows.map((row) => {
      const item = toDeliveryItem(row);
      const skipped = skips.get(row.id);
      return skipped ? { ...item, skipped_reasons: skipped } : item;
    }),
    page_info: {
      has_next_page: page.nextCursor !== undefined,
      ...(page.nextCursor ? { next_cursor: page.nextCursor } : {}),
    },
  };
}
