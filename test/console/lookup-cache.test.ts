import { describe, expect, it } from 'vitest';
import { LookupCache } from '../../src/console/lookup-cache.ts';

describe('the console lookup cache', () => {
  it('answers from the cache within its lifetime and loads again after it', async () => {
    let now = 1_000;
    const cache = new LookupCache({ ttlMs: 10_000, now: () => now });
    let loads = 0;
    const load = async () => ++loads;
    expect(await cache.get('s1', 'factories', load)).toBe(1);
    now += 9_999;
    expect(await cache.get('s1', 'factories', load)).toBe(1);
    expect(await cache.get('s2', 'factories', load)).toBe(2); // another session loads its own
    now += 1;
    expect(await cache.get('s1', 'factories', load)).toBe(3);
  });

  it('keeps no failed load and forgets a session on request', async () => {
    const cache = new LookupCache({ now: () => 0 });
    await expect(cache.get('s', 'x', () => Promise.reject(new Error('down')))).rejects.toThrow('down');
    expect(await cache.get('s', 'x', async () => 'up')).toBe('up');
    await cache.get('s', 'y', async () => 'why');
    await cache.get('t', 'x', async () => 'other');
    cache.forget('s');
    expect(await cache.get('s', 'x', async () => 'fresh')).toBe('fresh');
    expect(await cache.get('t', 'x', async () => 'not this')).toBe('other');
  });

  it('holds at most its bound, dropping the oldest entries', async () => {
    const cache = new LookupCache({ maxEntries: 3, now: () => 0 });
    for (const name of ['a', 'b', 'c', 'd']) await cache.get('s', name, async () => name);
    expect(cache.size).toBe(3);
    expect(await cache.get('s', 'a', async () => 'reloaded')).toBe('reloaded');
    expect(await cache.get('s', 'd', async () => 'not reloaded')).toBe('d');
  });
});
