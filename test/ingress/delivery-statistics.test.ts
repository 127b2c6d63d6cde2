/**
 * Migration 0023: ANALYZE of the delivery log keeps small statistics for the columns queries filter on and none
 * for the payload and the other wide columns, so that it samples 3,000 rows instead of 30,000 (on PGlite it runs
 * on the one database thread, in front of every delivery).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, ENGINES } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';

describe.each(ENGINES)('statistics of the delivery log on %s', (engine) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(engine);
  });
  afterAll(async () => database?.close());

  it('samples what the planner uses and leaves the payload out', async () => {
    const { db } = database;
    await db.query(
      `INSERT INTO webhook_deliveries (id, webhook_uid, team_id, factory_id, webhook_name, label, identity, identity_source, size, received_at, payload, headers)
       SELECT 'dlv_s' || g, 'wh_' || (g % 7), 'team_1', 'fac_1', 'h', 'accepted', 'x-' || g, 'body_sha256', 100, now(), convert_to(repeat('p', 100), 'UTF8'), '{}'
         FROM generate_series(1, 500) g`,
    );
    await db.exec('ANALYZE webhook_deliveries');
    const stats = await db.query<{ attname: string }>(
      `SELECT attname FROM pg_stats WHERE schemaname = current_schema() AND tablename = 'webhook_deliveries' ORDER BY attname`,
    );
    const analyzed = stats.rows.map((r) => r.attname);
    expect(analyzed).toEqual(
      expect.arrayContaining(['identity', 'label', 'outbox_pending', 'received_at', 'webhook_uid']),
    );
    for (const wide of ['payload', 'headers', 'reason', 'id']) expect(analyzed).not.toContain(wide);

    const targets = await db.query<{ attname: string; target: number }>(
      `SELECT attname, attstattarget::int AS target FROM pg_attribute
        WHERE attrelid = 'webhook_deliveries'::regclass AND attnum > 0 AND NOT attisdropped`,
    );
    // PostgreSQL samples 300 rows per unit of the largest target: every column has one of 10 or less.
    expect(Math.max(...targets.rows.map((r) => r.target))).toBe(10);
  });
});
