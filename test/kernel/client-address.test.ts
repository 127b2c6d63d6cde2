import { describe, expect, it } from 'vitest';
import { ClientRateLimit } from '../../src/factories/client-rate-limit.ts';
import { clientKey } from '../../src/kernel/client-address.ts';

describe('per-client budgets (issue 28, items 6 and 9)', () => {
  it('count IPv4 as is, IPv4-mapped IPv6 as its IPv4, and IPv6 by its /64', () => {
    expect(clientKey('203.0.113.7')).toBe('203.0.113.7');
    expect(clientKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(clientKey('2001:db8:1:2:aaaa::1')).toBe(clientKey('2001:db8:1:2:ffff:ffff:ffff:ffff'));
    expect(clientKey('2001:db8:1:2::1')).not.toBe(clientKey('2001:db8:1:3::1'));
  });

  it('a client rotating through the addresses of its /64 spends one validation budget', async () => {
    const limit = new ClientRateLimit('test', 3, 60);
    for (let i = 1; i <= 3; i++) await limit.consume(`2001:db8:1:2::${i}`);
    await expect(limit.consume('2001:db8:1:2::99')).rejects.toMatchObject({ code: 'rate_limited' });
    await expect(limit.consume('2001:db8:1:3::1')).resolves.toBeUndefined();
  });
});
