/**
 * Issue 28, item 9: login CSRF on /console/sign-in, unthrottled API-key guessing, and /sessions pages without
 * the console's CSP. A cross-site form post (the attacker's page signing the victim's browser in as the
 * attacker) is refused; 600 wrong keys from one address are refused with 429 + Retry-After after the budget,
 * while a right key from another address still works; /sessions/… answers carry the console's CSP with
 * `frame-ancestors 'none'`. Client addresses are distinct loopback addresses (127.0.0.x), bound by the client.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** One HTTP request from the loopback address `from`. */
function send(
  server: TestServer,
  from: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Answer> {
  const url = new URL(path, server.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method,
        localAddress: from,
        headers: { ...headers, ...(body !== undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const signInForm = (key: string) => new URLSearchParams({ api_key: key }).toString();
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

describe.each(ENGINES.slice(0, 1))('console sign-in and API keys under attack on %s', (engine) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(engine);
  });
  afterAll(async () => {
    await s?.close();
  });

  it('refuses a cross-site sign-in form (login CSRF), with no cookie; a same-origin one signs in', async () => {
    const attackerKey = s.adminKey;
    const attempts: Record<string, string>[] = [
      { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
      { origin: 'https://evil.example' },
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site', origin: 'https://sub.127.0.0.1.example' },
      { origin: 'null' },
    ];
    for (const headers of attempts) {
      const res = await send(
        s,
        '127.0.0.1',
        'POST',
        '/console/sign-in',
        { ...FORM, ...headers },
        signInForm(attackerKey),
      );
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(res.headers['set-cookie'], JSON.stringify(headers)).toBeUndefined();
      expect(res.text).toContain('Sign in from this console');
    }
    const own = new URL(s.url);
    const same = await send(
      s,
      '127.0.0.1',
      'POST',
      '/console/sign-in',
      { ...FORM, origin: own.origin, 'sec-fetch-site': 'same-origin' },
      signInForm(attackerKey),
    );
    expect(same.status).toBe(303);
    expect(String(same.headers['set-cookie'])).toMatch(/HttpOnly/);
  });

  it('600 wrong API keys from one address: refused with 429 + Retry-After; a right key elsewhere still works', async () => {
    const guesser = '127.0.0.2';
    const statuses: number[] = [];
    let retryAfter: string | undefined;
    for (let i = 0; i < 600; i++) {
      const res = await send(s, guesser, 'GET', '/api/v1/whoami', { authorization: `Bearer ay_guess_${i}` });
      statuses.push(res.status);
      if (res.status === 429) retryAfter = res.headers['retry-after'] as string;
    }
    const allowed = s.server.ctx.config.authFailureLimit;
    expect(statuses.slice(0, allowed).every((st) => st === 401)).toBe(true);
    expect(statuses.slice(allowed).every((st) => st === 429)).toBe(true);
    expect(Number(retryAfter)).toBeGreaterThan(0);
    const last = await send(s, guesser, 'GET', '/api/v1/whoami', { authorization: 'Bearer ay_guess_last' });
    expect(last.status).toBe(429);
    expect(JSON.parse(last.text)).toMatchObject({ code: 'rate_limited' });
    // A right key no one has used yet is not even checked from the guesser's address (no answer tells a guess
    // apart); from another address it works.
    const fresh = (await s.api('POST', '/api-keys', { name: 'never-used', role: 'member' })).body.key as string;
    expect((await send(s, guesser, 'GET', '/api/v1/whoami', { authorization: `Bearer ${fresh}` })).status).toBe(429);
    const other = await send(s, '127.0.0.3', 'GET', '/api/v1/whoami', { authorization: `Bearer ${fresh}` });
    expect(other.status).toBe(200);
    // A key in use (it authenticated in the last hour) is no guess: people behind the guesser's NAT keep working.
    expect((await send(s, guesser, 'GET', '/api/v1/whoami', { authorization: `Bearer ${s.adminKey}` })).status).toBe(
      200,
    );
  });

  it('throttles console sign-in guessing per address the same way', async () => {
    const guesser = '127.0.0.4';
    const statuses: number[] = [];
    let last: Answer | undefined;
    for (let i = 0; i < 40; i++) {
      last = await send(s, guesser, 'POST', '/console/sign-in', FORM, signInForm(`ay_wrong_${i}`));
      statuses.push(last.status);
    }
    const allowed = s.server.ctx.config.authFailureLimit;
    expect(statuses.slice(0, allowed).every((st) => st === 401)).toBe(true);
    expect(statuses.slice(allowed).every((st) => st === 429)).toBe(true);
    expect(Number(last!.headers['retry-after'])).toBeGreaterThan(0);
    expect(last!.text).toContain('Too many failed sign-ins');
    // Another address signs in with a right key.
    const ok = await send(s, '127.0.0.5', 'POST', '/console/sign-in', FORM, signInForm(s.adminKey));
    expect(ok.status).toBe(303);
  });

  it("serves /sessions/… pages and refusals under the console's CSP, never framed", async () => {
    const created = await s.api('POST', '/agent/runs', { prompt: 'Framed?' });
    const run = (await s.api('GET', `/agent/runs/${created.body.run_id}`)).body;
    const link = new URL(run.session_link);
    for (const path of [link.pathname + link.search, `/sessions/${run.session_id}`]) {
      const res = await send(s, '127.0.0.1', 'GET', path);
      const csp = String(res.headers['content-security-policy']);
      expect(csp, path).toContain("frame-ancestors 'none'");
      expect(csp, path).toContain("default-src 'self'");
      expect(csp, path).not.toContain('unsafe-inline');
      expect(res.headers['x-frame-options'], path).toBe('DENY');
      expect(res.headers['x-content-type-options'], path).toBe('nosniff');
    }
    const page = await send(s, '127.0.0.1', 'GET', link.pathname + link.search);
    expect(page.status).toBe(200);
    expect(page.text).not.toMatch(/<script>|<style>| style=| on[a-z]+=/);
  });
});
