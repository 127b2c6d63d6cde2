/**
 * Issue 24, point 7: bad input answers 4xx problem documents, never 500, and never holds a connection open.
 * Each case is a reproduction found by probing a running server.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, findStringFault, jsonDeeperThan } from '../../src/kernel/hostile-input.ts';
import { ENGINES } from '../support/db.ts';
import { request, startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { deliveriesOf, seedWebhook } from '../ingress/support.ts';

/** Sends raw bytes on a fresh connection; resolves what the server wrote until it closed (or `deadlineMs`). */
function rawExchange(
  url: string,
  head: string,
  options: { deadlineMs?: number } = {},
): Promise<{ text: string; closed: boolean; elapsedMs: number }> {
  const { hostname, port } = new URL(url);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closed: false, elapsedMs: performance.now() - started });
    }, options.deadlineMs ?? 10_000);
    socket.on('connect', () => socket.write(head));
    socket.on('data', (d) => {
      text += d.toString('utf8');
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      if (text) resolve({ text, closed: true, elapsedMs: performance.now() - started });
      else reject(err);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closed: true, elapsedMs: performance.now() - started });
    });
  });
}

function statusOf(raw: string): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1]);
}

function problemOf(raw: string): { code: string; status: number; detail: string } {
  return JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));
}

describe('hostile-input checks', () => {
  it('measure JSON depth without parsing, ignoring brackets inside strings', () => {
    expect(jsonDeeperThan('[[[]]]', 3)).toBe(false);
    expect(jsonDeeperThan('[[[[]]]]', 3)).toBe(true);
    expect(jsonDeeperThan('{"a":"[[[[[[[[[[\\"[[[[["}', 2)).toBe(false);
    expect(jsonDeeperThan('['.repeat(200_000), MAX_JSON_DEPTH)).toBe(true);
  });

  it('find NUL and lone surrogates in values and keys, naming the member', () => {
    expect(findStringFault({ a: ['ok', 'b\0'] }, 'body')).toEqual({
      path: 'body.a[1]',
      fault: 'contains a NUL character',
    });
    expect(findStringFault({ config: { name: '\uD800x' } }, 'body')?.path).toBe('body.config.name');
    expect(findStringFault({ 'x\uDC00': 1 }, 'body')?.fault).toMatch(/key .*surrogate/);
    expect(findStringFault({ emoji: '\u{1F600}', text: 'fine' }, 'body')).toBeUndefined();
    // Raw bytes are not text, and are not walked byte by byte.
    expect(findStringFault(Buffer.alloc(1024, 0), 'body')).toBeUndefined();
    let deep: unknown = 'x\0';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(findStringFault(deep, 'body')?.fault).toBe('contains a NUL character');
  });
});

describe.each(ENGINES)('bad input over HTTP on %s', (engine) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(engine, { config: { bodyTimeoutSeconds: 1 } });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('answers Content-Length: 2147483648 on the ingress with 413 before authentication, and logs it', async () => {
    const hook = await seedWebhook(s);
    const path = new URL(hook.url).pathname;
    const res = await rawExchange(
      s.url,
      `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nauthorization: Bearer wrong\r\ncontent-length: 2147483648\r\n\r\n{`,
    );
    expect(statusOf(res.text)).toBe(413);
    expect(problemOf(res.text)).toMatchObject({ code: 'payload_too_large', status: 413 });
    const rows = await deliveriesOf(s, hook.uid);
    expect(rows.map((r) => [r.label, r.size])).toEqual([['rejected_too_large', 2 ** 31 - 1]]);
  });

  it('answers a declared API body over the limit with 413 before authentication, without reading it', async () => {
    for (const path of ['/api/v1/agent/runs', '/api/v1/no-such-route']) {
      const res = await rawExchange(
        s.url,
        `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 2147483648\r\n\r\n{`,
      );
      expect(statusOf(res.text), path).toBe(413);
      expect(problemOf(res.text)).toMatchObject({ code: 'payload_too_large' });
      expect(res.text.toLowerCase()).toContain('connection: close');
    }
  });

  it('refuses NUL and lone surrogates in any string of a run request with 400 naming the member', async () => {
    const cases: [unknown, string][] = [
      [{ prompt: 'a\u0000b' }, 'body.prompt'],
      [{ prompt: 'x', title: '\uD800' }, 'body.title'],
      [{ prompt: 'x', config: { name: 'n\u0000' } }, 'body.config.name'],
      [
        { prompt: 'x', config: { mcp_servers: { s: { command: 'c', args: ['\uDFFF'] } } } },
        'body.config.mcp_servers.s.args[0]',
      ],
      [{ prompt: 'x', metadata: { k: '\u0000' } }, 'body.metadata.k'],
      [{ prompt: 'x', some_future_member: { deep: ['\u0000'] } }, 'body.some_future_member.deep[0]'],
    ];
    for (const [body, member] of cases) {
      // JSON.stringify writes a lone surrogate as \udXXX, as a hostile client would.
      const res = await s.api('POST', '/agent/runs', JSON.stringify(body));
      expect(res.status, member).toBe(400);
      expect(res.body, member).toMatchObject({ code: 'invalid_string' });
      expect(res.body.detail, member).toContain(member);
    }
  });

  it('refuses %00 and encoded lone surrogates in the query and the path with 400', async () => {
    for (const [path, member] of [
      ['/agent/runs?q=%00', 'querystring.q'],
      ['/agent/runs?name=a%00b', 'querystring.name'],
      ['/agent/runs?created_after=%00', 'querystring.created_after'],
      ['/agent/runs/run_%00', 'path.runId'],
      ['/agent/runs/%00/cancel', 'path.runId'],
      ['/secrets/a%00', 'path.name'],
    ] as const) {
      const res = await s.api(path.includes('cancel') ? 'POST' : 'GET', path);
      expect(res.status, path).toBe(400);
      expect(res.body, path).toMatchObject({ code: 'invalid_string' });
      expect(res.body.detail, path).toContain(member);
    }
    // Invalid percent-encoding in a path is a problem document too, not Fastify's own body.
    const bad = await s.api('GET', '/agent/runs/%E0%A4%A');
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'invalid_request', status: 400 });
  });

  it('refuses out-of-range and invalid timestamps with 400 invalid_timestamp', async () => {
    for (const value of ['0000-01-01', '10000-01-01', '+010000-01-01T00:00:00Z', '-000001-01-01T00:00:00Z', 'never']) {
      const res = await s.api('GET', `/agent/runs?created_after=${encodeURIComponent(value)}`);
      expect(res.status, value).toBe(400);
      expect(res.body, value).toMatchObject({ code: 'invalid_timestamp' });
      expect(res.body.detail).toContain('created_after');
    }
    expect((await s.api('GET', '/agent/runs?created_after=0001-01-01&created_before=9999-12-31')).status).toBe(200);
    const key = await s.api('POST', '/api-keys', { name: 'old', expires_at: '0000-01-01T00:00:00Z' });
    expect(key.status).toBe(400);
    expect(key.body).toMatchObject({ code: 'invalid_timestamp' });
  });

  it(`refuses JSON nested deeper than ${MAX_JSON_DEPTH} levels with 400, a 50,000-deep config included`, async () => {
    const deep = `{"prompt":"x","config":${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}}`;
    const res = await s.api('POST', '/agent/runs', deep);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'json_too_deep' });
    const arrays = await s.api('POST', '/agent/runs', `${'['.repeat(100_000)}${']'.repeat(100_000)}`);
    expect(arrays.body).toMatchObject({ code: 'json_too_deep' });
    let ok: unknown = 1;
    for (let i = 0; i < MAX_JSON_DEPTH - 2; i++) ok = { a: ok };
    const atLimit = await s.api('POST', '/agent/runs', { prompt: 'x', metadata: {}, some_member: ok });
    expect(atLimit.status).toBe(200);
  });

  it('closes slow-body connections after the body timeout with 408, on the API and the ingress', async () => {
    const hook = await seedWebhook(s);
    const targets = [
      { path: '/api/v1/agent/runs', auth: `authorization: Bearer ${s.adminKey}\r\n`, first: 408 },
      // Refused before its body is read: answered 401 at once, and the connection is still closed in time.
      { path: '/api/v1/agent/runs', auth: 'authorization: Bearer wrong\r\n', first: 401 },
      { path: new URL(hook.url).pathname, auth: `authorization: Bearer ${hook.secret}\r\n`, first: 408 },
    ];
    const results = await Promise.all(
      targets.map((t) =>
        rawExchange(
          s.url,
          `POST ${t.path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n${t.auth}content-length: 100\r\n\r\n{"pro`,
          { deadlineMs: 8_000 },
        ),
      ),
    );
    for (const [i, res] of results.entries()) {
      expect(res.closed, targets[i]!.path).toBe(true);
      expect(statusOf(res.text), targets[i]!.path).toBe(targets[i]!.first);
      if (targets[i]!.first === 408)
        expect(problemOf(res.text)).toMatchObject({ code: 'request_timeout', status: 408 });
    }
    // The server goes on answering.
    expect((await request(`${s.url}/healthz`)).status).toBe(200);
  });
});
