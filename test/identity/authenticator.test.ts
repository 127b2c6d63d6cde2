import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Authenticator, bootstrapIdentity } from '../../src/identity/service.ts';
import type { Db } from '../../src/kernel/db.ts';
import { createTestDatabase, ENGINES } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';

/** The test database, with a count of the key look-ups that reached it. */
function countingLookups(db: Db): { db: Db; lookups: () => number } {
  let lookups = 0;
  const counted: Db = Object.create(db) as Db;
  counted.query = (text, params) => {
    if (text.includes('FROM api_keys k JOIN principals')) lookups++;
    return db.query(text, params);
  };
  return { db: counted, lookups: () => lookups };
}

describe.each(ENGINES)('the API key authenticator on %s', (engine) => {
  let t: TestDatabase;
  let key: string;
  beforeAll(async () => {
    t = await createTestDatabase(engine);
    key = 'ay_authenticator_test_key_0123456789abcdef';
    await bootstrapIdentity(t.db, key);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers concurrent requests with a key not in the cache from one look-up', async () => {
    const { db, lookups } = countingLookups(t.db);
    const authenticator = new Authenticator(db);
    const principals = await Promise.all(Array.from({ length: 50 }, () => authenticator.authenticate(key)));
    expect(lookups()).toBe(1);
    expect(new Set(principals.map((p) => p?.keyId)).size).toBe(1);
    expect(principals[0]).toMatchObject({ role: 'admin', instanceAdmin: true });
    // unknown keys share a look-up too, and are refused
    const unknown = await Promise.all(Array.from({ length: 10 }, () => authenticator.authenticate('ay_no_such_key')));
    expect(unknown.every((p) => p === undefined)).toBe(true);
    expect(lookups()).toBe(2);
    // cached now
    await authenticator.authenticate(key);
    expect(lookups()).toBe(2);
  });

  it('does not cache a look-up that was under way when the cache was invalidated', async () => {
    const { db, lookups } = countingLookups(t.db);
    const authenticator = new Authenticator(db);
    const during = authenticator.authenticate(key);
    authenticator.invalidateAll();
    // a request after the revocation does not join the look-up that began before it
    const after = authenticator.authenticate(key);
    expect(lookups()).toBe(2);
    await Promise.all([during, after]);
    await authenticator.authenticate(key);
    expect(lookups()).toBe(2);
  });
});
