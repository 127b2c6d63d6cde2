import { createServer } from 'node:http';
import { EventEmitter } from 'node:events';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryWriter } from '../../src/ingress/delivery-writer.ts';
import type { DeliveryWriterOptions } from '../../src/ingress/delivery-writer.ts';
import { DeliveriesInProgress } from '../../src/ingress/in-progress.ts';
import type { DeliveryInsert } from '../../src/ingress/sql.ts';
import type { Db } from '../../src/kernel/db.ts';
import { newId } from '../../src/kernel/ids.ts';
import { createTestDatabase, ENGINES } from '../support/db.ts';
import { askWhenPoked } from '../support/signals.ts';
import type { TestDatabase } from '../support/db.ts';

function rejected(webhookUid: string): DeliveryInsert {
  return {
    id: newId('dlv'),
    webhookUid,
    teamId: 'team',
    factoryId: 'factory',
    webhookName: 'hook',
    label: 'rejected_auth',
    identity: null,
    identitySource: null,
    senderDeliveryId: null,
    duplicateOf: null,
    size: 2,
    receivedAt: new Date(),
    payload: null,
    headers: {},
    reason: 'wrong token',
    senderIp: '127.0.0.1',
  };
}

describe.each(ENGINES)('delivery writer groups on %s', (engine) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(engine);
  });
  afterAll(async () => database?.close());

  /** Writes `count` deliveries handed over in one turn; answers the size of each group the database received. */
  async function groupsOf(count: number, options: DeliveryWriterOptions): Promise<number[]> {
    const groups: number[] = [];
    // The same database, noting the rows of each insert into the log as it passes.
    const db: Db = {
      ...database.db,
      query: (text, params) => {
        if (text.startsWith('INSERT INTO webhook_deliveries'))
          groups.push((JSON.parse(String(params![0])) as unknown[]).length);
        return database.db.query(text, params);
      },
    };
    const writer = new DeliveryWriter(db, pino({ level: 'silent' }), options);
    const uid = newId('wh');
    await Promise.all(Array.from({ length: count }, () => writer.log(rejected(uid))));
    const written = await database.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_uid = $1',
      [uid],
    );
    expect(written.rows[0]!.n).toBe(count);
    return groups;
  }

  it('writes all that is queued in one group when it is not told the deliveries in progress', async () => {
    expect(await groupsOf(40, {})).toEqual([40]);
  });

  it('takes at most half the deliveries in progress per group, the rest in the next', async () => {
    expect(await groupsOf(40, { inProgress: () => 40 })).toEqual([20, 20]);
    expect(await groupsOf(40, { inProgress: () => 25 })).toEqual([13, 13, 13, 1]);
  });

  it('takes one at least, and never more than maxBatch', async () => {
    expect(await groupsOf(3, { inProgress: () => 0 })).toEqual([1, 1, 1]);
    expect(await groupsOf(30, { inProgress: () => 1000, maxBatch: 12 })).toEqual([12, 12, 6]);
  });
});

describe('deliveries in progress', () => {
  const inProgress = new DeliveriesInProgress();
  const closed = new EventEmitter();
  /** Resolves once no request is counted: looked at as each answer's connection closes, never on a timer. */
  const noneInProgress = () =>
    askWhenPoked(
      (poke) => {
        closed.on('close', poke);
        return () => closed.off('close', poke);
      },
      () => inProgress.count === 0,
      { what: 'no request in progress' },
    );
  const seen: number[] = [];
  const server = createServer((req, res) => {
    inProgress.track(res);
    // after the tracker's own listener: the count has dropped when this one runs
    res.once('close', () => closed.emit('close'));
    seen.push(inProgress.count);
    if (req.url === '/hang') return; // answered never: the client gives up
    setTimeout(() => res.end('ok'), 50);
  });
  let base: string;
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => new Promise<void>((resolve) => server.close(() => resolve())));

  it('counts a request from its arrival until its answer is sent', async () => {
    await Promise.all([fetch(`${base}/a`), fetch(`${base}/b`), fetch(`${base}/c`)].map(async (r) => (await r).text()));
    expect(Math.max(...seen)).toBe(3);
    await noneInProgress();
    expect(inProgress.count).toBe(0);
  });

  it('stops counting a request whose connection closes before the answer', async () => {
    const aborted = fetch(`${base}/hang`, { signal: AbortSignal.timeout(100) });
    await expect(aborted).rejects.toThrow();
    await noneInProgress();
    expect(inProgress.count).toBe(0);
  });
});
