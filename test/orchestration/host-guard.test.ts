/**
 * The factory interface's DNS-rebinding guard with its verdicts kept (src/orchestration/host-guard.ts): a kept
 * verdict is the one the check gives, per exact `Host` and `Origin` pair, however many pairs come and in which
 * order; the endpoint's own checks run in conformance.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { foreignHostReason, HostGuard, ownHostnames } from '../../src/orchestration/host-guard.ts';

describe('HostGuard', () => {
  it('answers as foreignHostReason for every pair, asked again and again', () => {
    const own = ownHostnames(['https://factory.example.test'], ['proxied']);
    const guard = new HostGuard(own);
    const cases: Record<string, string | undefined>[] = [
      { host: 'factory.example.test' },
      { host: 'factory.example.test', origin: 'https://evil.example' },
      { host: 'evil.example' },
      { host: 'factory.example.test', origin: 'https://factory.example.test' },
      { host: 'localhost:8080', origin: 'http://127.0.0.1:3000' },
      { host: 'proxied', origin: '' },
      { host: 'factory.example.test/x' },
      {},
    ];
    for (let round = 0; round < 3; round++)
      for (const headers of cases) expect(guard.reason(headers)).toBe(foreignHostReason(headers, own));
    // past its bound it forgets, and still answers the same
    for (let i = 0; i < 600; i++) {
      const headers = { host: i % 2 ? `h${i}.example` : 'factory.example.test', origin: `https://o${i % 300}.example` };
      expect(guard.reason(headers)).toBe(foreignHostReason(headers, own));
    }
    expect(guard.reason({ host: 'evil.example' })).toMatch(/not a name of this server/);
    expect(guard.reason({ host: 'factory.example.test' })).toBeUndefined();
  });
});
