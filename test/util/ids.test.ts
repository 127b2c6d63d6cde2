import { describe, expect, it } from 'vitest';
import { newId, timeOrderedUuid } from '../../src/kernel/ids.ts';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('ids', () => {
  it('timeOrderedUuid: UUIDv7, distinct across refills of its entropy pool, in millisecond order', () => {
    const before = Date.now();
    const ids = Array.from({ length: 1_000 }, () => timeOrderedUuid());
    const after = Date.now();
    for (const id of ids) expect(id).toMatch(UUID_V7);
    // 1,000 ids draw 16,000 bytes: the 4 KB pool is refilled three times, and no id repeats
    expect(new Set(ids).size).toBe(ids.length);
    const millis = ids.map((id) => parseInt(id.replaceAll('-', '').slice(0, 12), 16));
    expect(millis).toEqual([...millis].sort((a, b) => a - b));
    expect(millis[0]).toBeGreaterThanOrEqual(before);
    expect(millis.at(-1)).toBeLessThanOrEqual(after);
    // random parts differ even within one millisecond
    const tails = new Set(ids.map((id) => id.slice(-12)));
    expect(tails.size).toBe(ids.length);
  });

  it('newId: a prefix and a ULID that sorts by creation', () => {
    const ids = Array.from({ length: 100 }, () => newId('run'));
    for (const id of ids) expect(id).toMatch(/^run_[0-9a-hjkmnp-tv-z]{26}$/);
    expect(ids).toEqual([...ids].sort());
  });
});
