/**
 * Issue 24, point 7: session pages showed a run's prompt to anyone with the link, forever. Links are now
 * signed for one session and a lifetime.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionLinks } from '../../src/runs/session-link.ts';
import { ENGINES } from '../support/db.ts';
import { request, startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

function paramsOf(url: string): { exp: string; sig: string } {
  const q = new URL(url).searchParams;
  return { exp: q.get('exp')!, sig: q.get('sig')! };
}

describe('SessionLinks', () => {
  let now = Date.parse('2026-03-01T10:20:00Z');
  const links = new SessionLinks(randomBytes(32), {
    baseUrl: () => 'https://ay.example',
    ttlSeconds: 7 * 24 * 3600,
    now: () => now,
  });

  it('signs a session id and an expiry rounded up to the hour, and verifies only that pair', () => {
    const url = links.urlFor('sess-1');
    expect(url.startsWith('https://ay.example/sessions/sess-1?exp=')).toBe(true);
    const { exp, sig } = paramsOf(url);
    expect(Number(exp) % 3600).toBe(0);
    expect(Number(exp) * 1000 - now).toBeGreaterThanOrEqual(7 * 24 * 3600 * 1000);
    expect(links.urlFor('sess-1')).toBe(url);
    expect(links.verify('sess-1', exp, sig)).toBe('valid');
    expect(links.verify('sess-2', exp, sig)).toBe('invalid');
    expect(links.verify('sess-1', String(Number(exp) + 3600), sig)).toBe('invalid');
    expect(links.verify('sess-1', exp, `${sig.slice(0, -1)}${sig.endsWith('A') ? 'B' : 'A'}`)).toBe('invalid');
    expect(links.verify('sess-1', undefined, undefined)).toBe('invalid');
    expect(links.verify('sess-1', ['1'], sig)).toBe('invalid');
    expect(links.verify('sess-1', '1e3', sig)).toBe('invalid');
    now = Number(exp) * 1000 + 1000;
    expect(links.verify('sess-1', exp, sig)).toBe('expired');
  });

  it('does not verify links signed with another key', () => {
    const other = new SessionLinks(randomBytes(32), { baseUrl: () => '', ttlSeconds: 60, now: () => now });
    const { exp, sig } = paramsOf(`http://x${other.urlFor('sess-1')}`);
    expect(links.verify('sess-1', exp, sig)).toBe('invalid');
  });
});

describe.each(ENGINES)('session pages on %s', (engine) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(engine);
  });
  afterAll(async () => {
    await s?.close();
  });

  it("open with the run's signed link only, and say when it has expired", async () => {
    const created = await s.api('POST', '/agent/runs', { prompt: 'The secret plan' });
    const run = (await s.api('GET', `/agent/runs/${created.body.run_id}`)).body;
    const page = await request(run.session_link);
    expect(page.status).toBe(200);
    expect(page.text).toContain('The secret plan');
    expect(page.headers.get('cache-control')).toBe('private, no-store');

    const bare = `${s.url}/sessions/${run.session_id}`;
    for (const url of [bare, `${bare}?exp=99999999999`, `${bare}?exp=99999999999&sig=${'A'.repeat(43)}`]) {
      const refused = await request(url);
      expect(refused.status, url).toBe(404);
      expect(refused.body, url).toMatchObject({ code: 'resource_not_found' });
      expect(refused.text).not.toContain('The secret plan');
    }

    // A link the server signed an hour and a lifetime ago.
    const past = new SessionLinks(s.server.ctx.cipher.deriveKey('session-links'), {
      baseUrl: () => s.url,
      ttlSeconds: 60,
      now: () => Date.now() - 3_600_000,
    });
    const expired = await request(past.urlFor(run.session_id));
    expect(expired.status).toBe(410);
    expect(expired.body).toMatchObject({ code: 'session_link_expired' });
    expect(expired.text).not.toContain('The secret plan');
  });
});
