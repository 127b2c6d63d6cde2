/**
 * `@modelcontextprotocol/conformance` (the official server suite, run as its CLI) against the factory interface,
 * and its DNS-rebinding protection directly. The runner sends no headers, so a loopback proxy adds the bearer (a
 * team API key) and forwards every other header as sent (`Host` and `Origin` included). The scenarios that call
 * the reference server's fixture tools, prompts and resources, or need server-to-client requests, do not apply
 * to this server: docs/orchestration.md#conformance says why for each.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { ROOT } from '../execution/support.ts';
import { startMcpServer } from './support.ts';

const CLI = path.join(ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const PUBLIC_HOST = 'factory.example.test';
/** The `Host` a reverse proxy in front forwards (AGENTYARD_MCP_ALLOWED_HOSTS). */
const PROXIED_HOST = 'agentyard-internal';

/** Every check of these scenarios succeeds. */
const PASSING = [
  'dns-rebinding-protection',
  'ping',
  'server-initialize',
  'server-sse-multiple-streams',
  'server-sse-polling',
  'tools-call-error',
  'tools-call-simple-text',
  'tools-list',
];
/** Scenarios for what this server does not offer (docs/orchestration.md#conformance). */
const NOT_OFFERED = [
  'completion-complete',
  'elicitation-sep1034-defaults',
  'elicitation-sep1330-enums',
  'json-schema-2020-12',
  'logging-set-level',
  'prompts-get-embedded-resource',
  'prompts-get-simple',
  'prompts-get-with-args',
  'prompts-get-with-image',
  'prompts-list',
  'resources-list',
  'resources-read-binary',
  'resources-read-text',
  'resources-subscribe',
  'resources-templates-read',
  'resources-unsubscribe',
  'tools-call-audio',
  'tools-call-elicitation',
  'tools-call-embedded-resource',
  'tools-call-image',
  'tools-call-mixed-content',
  'tools-call-sampling',
  'tools-call-with-logging',
  'tools-call-with-progress',
];

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  errorMessage?: string;
}

/** A proxy on loopback that adds `Authorization` and forwards everything else as sent. */
async function bearerProxy(target: URL, bearer: string): Promise<{ url: string; close(): Promise<void> }> {
  const proxy = http.createServer((req, res) => {
    const upstream = http.request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, authorization: `Bearer ${bearer}` },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => proxy.close(() => resolve())),
  };
}

/** Runs the whole server suite; answers each scenario's checks. */
async function runConformance(url: string): Promise<Map<string, Check[]>> {
  const out = mkdtempSync(path.join(tmpdir(), 'agentyard-conformance-'));
  try {
    const child = spawn(process.execPath, [CLI, 'server', '--url', url, '--suite', 'all', '-o', out], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    await new Promise((resolve) => child.once('exit', resolve));
    const results = new Map<string, Check[]>();
    for (const dir of readdirSync(out)) {
      const scenario = /^server-(.+)-\d{4}-\d\d-\d\dT/.exec(dir)?.[1];
      if (!scenario) throw new Error(`unexpected result directory ${dir}`);
      results.set(scenario, JSON.parse(readFileSync(path.join(out, dir, 'checks.json'), 'utf8')) as Check[]);
    }
    if (results.size === 0) throw new Error(`the conformance CLI wrote no results:\n${output}`);
    return results;
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

describe('the factory interface against @modelcontextprotocol/conformance', () => {
  let s: TestServer;
  let proxy: { url: string; close(): Promise<void> };

  beforeAll(async () => {
    s = await startMcpServer('pglite', {
      config: { publicUrl: `https://${PUBLIC_HOST}`, mcpAllowedHosts: [PROXIED_HOST] },
    });
    proxy = await bearerProxy(new URL(s.url), s.adminKey);
  });
  afterAll(async () => {
    await proxy?.close();
    await s?.close();
  });

  it('passes every scenario for what it offers', async () => {
    const results = await runConformance(`${proxy.url}/api/v1/mcp/factory`);
    const passed: string[] = [];
    const failures: Record<string, string[]> = {};
    for (const [scenario, checks] of results) {
      const failed = checks.filter((c) => c.status === 'FAILURE');
      if (failed.length === 0) passed.push(scenario);
      else failures[scenario] = failed.map((c) => `${c.id}: ${c.errorMessage ?? ''}`);
    }
    expect(passed.sort(), JSON.stringify(failures, null, 2)).toEqual(PASSING);
    // every other scenario is one this server does not offer: a new scenario has to be looked at
    expect(Object.keys(failures).sort()).toEqual(NOT_OFFERED);
  }, 300_000);

  describe('the stateless JSON transport', () => {
    const send = async (body: unknown, headers: Record<string, string> = {}) => {
      const res = await fetch(`${s.apiUrl}/mcp/factory`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${s.adminKey}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...headers,
        },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, type: res.headers.get('content-type'), body: text ? JSON.parse(text) : undefined };
    };

    it('answers a request, a batch, and notifications alone as the SDK transport does', async () => {
      expect(await send({ jsonrpc: '2.0', id: 7, method: 'ping' })).toMatchObject({
        status: 200,
        type: expect.stringContaining('application/json'),
        body: { jsonrpc: '2.0', id: 7, result: {} },
      });
      const batch = await send([
        { jsonrpc: '2.0', id: 'a', method: 'ping' },
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', id: 'b', method: 'tools/list' },
      ]);
      expect(batch.status).toBe(200);
      expect(batch.body.map((m: { id: string }) => m.id)).toEqual(['a', 'b']);
      expect(batch.body[1].result.tools.map((t: { name: string }) => t.name)).toContain('dispatch_agent');
      const note = await send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      expect(note.status).toBe(202);
      expect(note.body).toBeUndefined();
      // an unknown method is a JSON-RPC error in a 200 answer
      expect((await send({ jsonrpc: '2.0', id: 8, method: 'prompts/list' })).body).toMatchObject({
        id: 8,
        error: { code: -32601 },
      });
    });

    it('refuses what the transport refuses, with a JSON-RPC error', async () => {
      const notAcceptable = await send({ jsonrpc: '2.0', id: 1, method: 'ping' }, { accept: 'application/json' });
      expect(notAcceptable.status).toBe(406);
      expect(notAcceptable.body.error.code).toBe(-32000);
      const version = await send({ jsonrpc: '2.0', id: 1, method: 'ping' }, { 'mcp-protocol-version': '1999-01-01' });
      expect(version.status).toBe(400);
      expect(version.body.error.message).toContain('Unsupported protocol version');
      const invalid = await send({ hello: 'world' });
      expect(invalid).toMatchObject({ status: 400, body: { error: { code: -32700 } } });
      const twoInits = await send([
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'a', version: '1' } },
        },
        {
          jsonrpc: '2.0',
          id: 2,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'a', version: '1' } },
        },
      ]);
      expect(twoInits.status).toBe(400);
      const tooMany = await send(Array.from({ length: 101 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'ping' })));
      expect(tooMany.status).toBe(400);
    });
  });

  describe('DNS-rebinding protection', () => {
    const ping = (headers: Record<string, string>) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const target = new URL(`${s.apiUrl}/mcp/factory`);
        const req = http.request(
          {
            host: target.hostname,
            port: target.port,
            path: target.pathname,
            method: 'POST',
            headers: {
              authorization: `Bearer ${s.adminKey}`,
              'content-type': 'application/json',
              accept: 'application/json, text/event-stream',
              ...headers,
            },
          },
          (res) => {
            let body = '';
            res.on('data', (d: Buffer) => (body += d.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }));
      });

    it('refuses a foreign Host or Origin with 403 naming the header', async () => {
      const foreignHost = await ping({ host: 'evil.example.com' });
      expect(foreignHost.status).toBe(403);
      expect(JSON.parse(foreignHost.body)).toMatchObject({ code: 'not_authorized' });
      expect(foreignHost.body).toContain('Host header (evil.example.com)');
      const foreignOrigin = await ping({ host: new URL(s.url).host, origin: 'http://evil.example.com' });
      expect(foreignOrigin.status).toBe(403);
      expect(foreignOrigin.body).toContain('Origin header (http://evil.example.com)');
      expect((await ping({ origin: 'null' })).status).toBe(403);
      expect((await ping({ host: 'localhost.evil.example.com:80' })).status).toBe(403);
    });

    it('answers loopback names, the public URL host and the allowed hosts, with or without Origin', async () => {
      for (const host of [
        '127.0.0.1:1',
        'localhost',
        '[::1]:8080',
        PUBLIC_HOST,
        `${PUBLIC_HOST}:443`,
        `${PROXIED_HOST}:8080`,
      ]) {
        const answer = await ping({ host });
        expect(answer.status, host).toBe(200);
        expect(JSON.parse(answer.body)).toMatchObject({ id: 1, result: {} });
      }
      expect((await ping({ origin: `https://${PUBLIC_HOST}` })).status).toBe(200);
      expect((await ping({ origin: 'http://localhost:3000' })).status).toBe(200);
    });

    it('checks the host before the bearer', async () => {
      const answer = await request(`${s.apiUrl}/mcp/factory`, {
        method: 'POST',
        headers: { origin: 'http://evil.example.com' },
        body: { jsonrpc: '2.0', id: 1, method: 'ping' },
      });
      expect(answer.status).toBe(403);
    });
  });
});
