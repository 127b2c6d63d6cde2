import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeDeliveries } from '../../src/ingress/retention.ts';
import { DELIVERIES_PURGED_TOPIC } from '../../src/kernel/topics.ts';
import { whenTold } from '../support/signals.ts';
import { createTestDatabase, ENGINES } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { deliveriesOf, post, seedWebhook } from './support.ts';

const DAY = 24 * 60 * 60 * 1000;

describe.each(ENGINES)('delivery log retention on %s', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    // No outbox evaluator: it would mark the deliveries these tests leave pending as evaluated on its next poll.
    server = await startTestServer(engine, { compose: { automations: false } });
  });
  afterAll(async () => server?.close());

  async function insertAged(uid: string, count: number, ageMs: number, pending = false): Promise<void> {
    await server.server.ctx.db.query(
      `INSERT INTO webhook_deliveries (id, webhook_uid, team_id, factory_id, webhook_name, label, size, received_at, outbox_pending)
       SELECT 'dlv_' || $1 || '_' || $4::text || '_' || g, $1, 't', 'f', 'n', CASE WHEN $5 THEN 'accepted' ELSE 'rejected_auth' END, 1,
              $2::timestamptz - (g || ' milliseconds')::interval, $5
         FROM generate_series(1, $3::int) AS g`,
      [uid, new Date(Date.now() - ageMs), count, ageMs, pending],
    );
  }

  const count = async (uid: string) =>
    (
      await server.server.ctx.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_uid = $1',
        [uid],
      )
    ).rows[0]!.n;

  it('keeps the latest 50 and everything from the last 7 days per webhook, and purges what is beyond both', async () => {
    await insertAged('wh_a', 60, 8 * DAY); // all old: the newest 50 stay
    await insertAged('wh_b', 10, 8 * DAY); // old and beyond the latest 50 …
    await insertAged('wh_b', 55, 1 * DAY); // … because 55 recent ones are newer; the recent ones all stay
    await insertAged('wh_c', 30, 30 * DAY); // old but among the latest 50
    await insertAged('wh_d', 5, 6 * DAY); // recent
    const purged = await purgeDeliveries(server.server.ctx.db);
    expect(purged).toBe(20);
    expect([await count('wh_a'), await count('wh_b'), await count('wh_c'), await count('wh_d')]).toEqual([
      50, 55, 30, 5,
    ]);
    // wh_a's rows are 1 ms apart, g = 1 the newest: the 50 newest stay.
    const kept = await server.server.ctx.db.query<{ g: number }>(
      "SELECT split_part(id, '_', 5)::int AS g FROM webhook_deliveries WHERE webhook_uid = 'wh_a' ORDER BY g",
    );
    expect(kept.rows.map((r) => r.g)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(await purgeDeliveries(server.server.ctx.db)).toBe(0);
  });

  it('purges in chunks until nothing is due, and orders deliveries of one instant by id', async () => {
    const { db } = server.server.ctx;
    const at = new Date(Date.now() - 10 * DAY);
    // 5,120 deliveries of the same instant: more than one chunk, and only the id tells the newest 50 apart
    await db.query(
      `INSERT INTO webhook_deliveries (id, webhook_uid, team_id, factory_id, webhook_name, label, size, received_at)
       SELECT 'dlv_same_' || g, 'wh_same', 't', 'f', 'n', 'rejected_auth', 1, $1 FROM generate_series(1, 5120) AS g`,
      [at],
    );
    expect(await purgeDeliveries(db)).toBe(5_070);
    const kept = (
      await db.query<{ id: string }>("SELECT id FROM webhook_deliveries WHERE webhook_uid = 'wh_same'")
    ).rows.map((r) => r.id);
    const newest = Array.from({ length: 5120 }, (_, i) => `dlv_same_${i + 1}`)
      .sort((a, b) => (Buffer.from(a) < Buffer.from(b) ? -1 : 1))
      .slice(-50);
    expect(kept.sort()).toEqual(newest.sort());
  });

  it('never purges a delivery still waiting in the outbox', async () => {
    await insertAged('wh_e', 55, 9 * DAY, true);
    expect(await purgeDeliveries(server.server.ctx.db)).toBe(0);
    expect(await count('wh_e')).toBe(55);
  });

  it('purges on a timer in a running server', async () => {
    const timed = await startTestServer(engine, { compose: { ingress: { retentionIntervalMs: 50 } } });
    try {
      const db = timed.server.ctx.db;
      await db.query(
        `INSERT INTO webhook_deliveries (id, webhook_uid, team_id, factory_id, webhook_name, label, size, received_at)
         SELECT 'dlv_timer_' || g, 'wh_timer', 't', 'f', 'n', 'duplicate', 1, now() - interval '8 days' - (g || ' seconds')::interval
           FROM generate_series(1, 51) AS g`,
      );
      // the timer's pass says what it purged
      const left = await whenTold(
        timed.server.ctx.bus,
        [DELIVERIES_PURGED_TOPIC],
        async () => {
          const n = (
            await db.query<{ n: number }>(
              "SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_uid = 'wh_timer'",
            )
          ).rows[0]!.n;
          return n <= 50 ? n : undefined;
        },
        { what: 'the timed purge' },
      );
      expect(left).toBe(50);
    } finally {
      await timed.close();
    }
  });
});

describe.each(ENGINES)('restart on %s', (engine) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(engine);
  });
  afterAll(async () => database?.close());

  it('every delivery answered 202 is in the log and the outbox after a restart', async () => {
    const first = await startTestServer(engine, { database });
    const hook = await seedWebhook(first);
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => post(hook.url, `{"i":${i}}`, { authorization: `Bearer ${hook.secret}` })),
    );
    expect(answers.every((r) => r.status === 202)).toBe(true);
    await first.close();
    const second = await startTestServer(engine, { database });
    try {
      const rows = await deliveriesOf(second, hook.uid);
      expect(rows.map((r) => r.id).sort()).toEqual(answers.map((r) => r.body.delivery_id).sort());
      expect(rows.every((r) => r.label === 'accepted')).toBe(true);
      expect(
        (
          await post(hook.url.replace(first.url, second.url), '{"after":"restart"}', {
            authorization: `Bearer ${hook.secret}`,
          })
        ).status,
      ).toBe(202);
    } finally {
      await second.close();
    }
  });
});
