/**
 * The two accept statements of the delivery writer: the plain insert for groups that repeat nothing, and the
 * `ON CONFLICT` form it falls back to when a group repeats an accepted delivery.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import { AcceptForm, DeliveryWriter } from '../../src/ingress/delivery-writer.ts';
import { deliveryKey } from '../../src/ingress/identity.ts';
import { acceptNewDeliveries, IDENTITY_INDEX } from '../../src/ingress/sql.ts';
import type { AcceptInsert } from '../../src/ingress/sql.ts';
import { isUniqueViolation } from '../../src/store/errors.ts';
import { newId } from '../../src/kernel/ids.ts';
import { createTestDatabase, ENGINES } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';

function delivery(webhookUid: string, body: string): AcceptInsert {
  const payload = Buffer.from(body);
  return {
    id: newId('dlv'),
    webhookUid,
    teamId: 'team_af',
    factoryId: 'fac_af',
    webhookName: 'hook',
    label: 'accepted',
    identity: `body_sha256:${createHash('sha256').update(payload).digest('hex')}`,
    identitySource: 'body_sha256',
    senderDeliveryId: null,
    duplicateOf: null,
    size: payload.length,
    receivedAt: new Date(),
    payload,
    headers: { 'content-type': 'application/json' },
    reason: null,
    senderIp: '127.0.0.1',
  };
}

describe.each(ENGINES)('accept statements on %s', (engine) => {
  let database: TestDatabase;
  let uid: string;
  let bodies = 0;
  const fresh = (): AcceptInsert => delivery(uid, `{"n":${++bodies}}`);
  const group = (rows: AcceptInsert[], secretVersion = 1) => rows.map((row) => ({ row, secretVersion }));

  async function storedIds(): Promise<Set<string>> {
    const res = await database.db.query<{ id: string }>('SELECT id FROM webhook_deliveries WHERE webhook_uid = $1', [
      uid,
    ]);
    return new Set(res.rows.map((r) => r.id));
  }

  beforeAll(async () => {
    database = await createTestDatabase(engine);
    await database.db.query("INSERT INTO teams (id, name) VALUES ('team_af', 'accept forms')");
    await database.db.query(
      `INSERT INTO factories (id, team_id, name, source, state) VALUES ('fac_af', 'team_af', 'f', '{"type":"managed"}', 'applied')`,
    );
  });
  afterAll(async () => database?.close());

  beforeEach(async () => {
    uid = newId('wh');
    await database.db.query(
      `INSERT INTO webhooks (uid, team_id, factory_id, name, file, auth_mode, secret_name, secret_ciphertext)
       VALUES ($1, 'team_af', 'fac_af', $1, 'webhooks/hook.yaml', 'token', 'hook', 'x')`,
      [uid],
    );
  });

  it('accepts a group that repeats nothing with the plain insert', async () => {
    const form = new AcceptForm();
    const rows = [fresh(), fresh(), fresh()];
    const result = await form.accept(database.db, group(rows));
    expect(result.accepted).toEqual(new Set(rows.map((r) => r.id)));
    expect(result.live.get(uid)).toEqual({ secretVersion: 1, subscribed: false });
    expect(await storedIds()).toEqual(new Set(rows.map((r) => r.id)));
    expect(form.conflictGroups).toBe(0);
  });

  it('a repeat fails the plain insert as a whole; the ON CONFLICT form then accepts the rest and refuses the repeat', async () => {
    const first = fresh();
    await new AcceptForm().accept(database.db, group([first]));
    const repeat = delivery(uid, first.payload.toString());
    const others = [fresh(), fresh()];

    const failed = await acceptNewDeliveries(database.db, group([others[0]!, repeat, others[1]!])).catch(
      (err: unknown) => err,
    );
    expect(isUniqueViolation(failed, IDENTITY_INDEX)).toBe(true);
    expect(await storedIds()).toEqual(new Set([first.id]));

    const form = new AcceptForm();
    const result = await form.accept(database.db, group([others[0]!, repeat, others[1]!]));
    expect(result.accepted).toEqual(new Set(others.map((r) => r.id)));
    expect(await storedIds()).toEqual(new Set([first.id, ...others.map((r) => r.id)]));
    expect(form.conflictGroups).toBeGreaterThan(0);
  });

  it('keeps the ON CONFLICT form while repeats come, and goes back to the plain insert after a window without', async () => {
    const form = new AcceptForm();
    const seed = fresh();
    await form.accept(database.db, group([seed]));
    await form.accept(database.db, group([delivery(uid, seed.payload.toString()), fresh()]));
    const window = form.conflictGroups + 1;
    expect(window).toBeGreaterThan(1);

    // A repeat inside the window starts it again.
    await form.accept(database.db, group([fresh()]));
    await form.accept(database.db, group([delivery(uid, seed.payload.toString())]));
    expect(form.conflictGroups).toBe(window);

    while (form.conflictGroups > 0) {
      const row = fresh();
      expect((await form.accept(database.db, group([row]))).accepted).toEqual(new Set([row.id]));
    }
    const last = fresh();
    expect((await form.accept(database.db, group([last]))).accepted).toEqual(new Set([last.id]));
    expect(form.conflictGroups).toBe(0);
  });

  it('inserts nothing for a webhook rotated or disabled since the deliveries authenticated, in either form', async () => {
    await database.db.query('UPDATE webhooks SET secret_version = 2 WHERE uid = $1', [uid]);
    const rotated = await acceptNewDeliveries(database.db, group([fresh(), fresh()], 1));
    expect(rotated.accepted.size).toBe(0);
    expect(rotated.live.get(uid)?.secretVersion).toBe(2);

    const current = fresh();
    const mixed = await acceptNewDeliveries(database.db, [...group([fresh()], 1), ...group([current], 2)]);
    expect(mixed.accepted).toEqual(new Set([current.id]));

    await database.db.query('UPDATE webhooks SET enabled = false WHERE uid = $1', [uid]);
    const form = new AcceptForm();
    const gone = await form.accept(database.db, group([fresh()], 2));
    expect(gone.accepted.size).toBe(0);
    expect(gone.live.has(uid)).toBe(false);
    expect(await storedIds()).toEqual(new Set([current.id]));
  });

  it('indexes the key migration 0093 gives the rows logged before it, so a repeat of one is refused', async () => {
    // a row as logged before 0093 (no key), then keyed by the migration's own statement
    const old = delivery(uid, '{"before":"0093 \u00e9\u6771"}');
    const sender = {
      ...delivery(uid, '{"n":"sender"}'),
      identity: 'sender-ïd-\u6771',
      identitySource: 'delivery_id_header' as const,
    };
    for (const row of [old, sender]) {
      await database.db.query(
        `INSERT INTO webhook_deliveries (id, webhook_uid, team_id, factory_id, webhook_name, label, identity, size, received_at, payload)
         VALUES ($1, $2, 'team_af', 'fac_af', 'hook', 'accepted', $3, 1, now(), '\\x7b7d')`,
        [row.id, uid, row.identity],
      );
    }
    const migration = readFileSync(
      new URL('../../src/store/migrations/0093_delivery_identity_key.sql', import.meta.url),
      'utf8',
    );
    const backfill = /^UPDATE webhook_deliveries[\s\S]*?;$/m.exec(migration)![0];
    await database.db.query(backfill);
    const keys = await database.db.query<{ id: string; identity_key: Uint8Array }>(
      'SELECT id, identity_key FROM webhook_deliveries WHERE id = ANY($1::text[])',
      [[old.id, sender.id]],
    );
    for (const row of [old, sender]) {
      const stored = keys.rows.find((r) => r.id === row.id)!.identity_key;
      expect(Buffer.from(stored).equals(deliveryKey(uid, row.identity)), row.identity).toBe(true);
    }

    const repeats = [delivery(uid, old.payload.toString()), { ...fresh(), identity: sender.identity }];
    const result = await new AcceptForm().accept(database.db, group([...repeats, fresh()]));
    expect(result.accepted.size).toBe(1);
    expect([...result.accepted].some((id) => repeats.some((r) => r.id === id))).toBe(false);
    // the same identity at another webhook is not a repeat
    const elsewhere = newId('wh');
    await database.db.query(
      `INSERT INTO webhooks (uid, team_id, factory_id, name, file, auth_mode, secret_name, secret_ciphertext)
       VALUES ($1, 'team_af', 'fac_af', $1, 'webhooks/hook.yaml', 'token', 'hook', 'x')`,
      [elsewhere],
    );
    const other = { ...delivery(elsewhere, old.payload.toString()) };
    expect((await new AcceptForm().accept(database.db, group([other]))).accepted).toEqual(new Set([other.id]));
  });

  it('with two groups in flight, a delivery repeated across them is accepted once and the copy is its duplicate', async () => {
    // Each group takes half of the 40 in progress: the first twenty bodies, then the same twenty again, sent
    // while the first group is in flight (on PostgreSQL its statement runs beside the first one's).
    const writer = new DeliveryWriter(database.db, pino({ level: 'silent' }), { concurrency: 2, inProgress: () => 40 });
    const originals = Array.from({ length: 20 }, () => fresh());
    const copies = originals.map((row) => delivery(uid, row.payload.toString()));
    const outcomes = await Promise.all([...originals, ...copies].map((row) => writer.accept(row, 1)));

    const accepted = new Map<string, string>();
    for (const [i, outcome] of outcomes.entries()) {
      if (outcome.outcome === 'accepted') accepted.set([...originals, ...copies][i]!.identity, outcome.id);
    }
    expect(accepted.size).toBe(20);
    for (const [i, outcome] of outcomes.entries()) {
      if (outcome.outcome === 'accepted') continue;
      const row = [...originals, ...copies][i]!;
      expect(outcome).toEqual({ outcome: 'duplicate', id: row.id, duplicateOf: accepted.get(row.identity) });
    }
    const stored = await database.db.query<{ label: string; n: number }>(
      'SELECT label, count(*)::int AS n FROM webhook_deliveries WHERE webhook_uid = $1 GROUP BY label ORDER BY label',
      [uid],
    );
    expect(stored.rows).toEqual([
      { label: 'accepted', n: 20 },
      { label: 'duplicate', n: 20 },
    ]);
  });
});
