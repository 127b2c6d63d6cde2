/**
 * Issue 28, item 2: SSRF past the git source URL policy. A URL whose host the policy could not parse (an IPv6
 * zone id) used to skip the check, and git connected to loopback. Every form that reaches this machine is now
 * refused, at registration and again at fetch, before git runs: loopback listeners count connections and must
 * see none. Every refused or unreachable host gets the same message, so no answer tells an open port from a
 * closed one.
 */
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GitSource } from '../../src/sources/git.ts';
import {
  SourceUrlPolicy,
  isInternalAddress,
  parseGitEndpoint,
  refusedHostMessage,
} from '../../src/sources/url-policy.ts';
import type { GitSourceSpec } from '../../src/sources/types.ts';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

const scratch = mkdtempSync(path.join(tmpdir(), 'agentyard-ssrf-'));

/** A TCP listener that counts the connections it receives (and answers none of them as git). */
async function listener(host: string): Promise<{ server: Server; port: number; connections: () => number }> {
  let count = 0;
  const server = createServer((socket) => {
    count++;
    socket.end('not git\r\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { server, port: address.port, connections: () => count };
}

/** Every spelling of "this machine" the attack used or could use, on `port`. */
function hostileUrls(port: number): string[] {
  return [
    `https://[::ffff:127.0.0.1%25lo]:${port}/r.git`,
    `https://[::ffff:127.0.0.1%lo]:${port}/r.git`,
    `https://[fe80::1%25eth0]:${port}/r.git`,
    `https://[::1%25lo]:${port}/r.git`,
    `https://[::ffff:127.0.0.1]:${port}/r.git`,
    `https://[::ffff:7f00:1]:${port}/r.git`,
    `https://[::127.0.0.1]:${port}/r.git`,
    `https://[64:ff9b::7f00:1]:${port}/r.git`,
    `https://[2002:7f00:1::]:${port}/r.git`,
    `https://[::1]:${port}/r.git`,
    `https://[::]:${port}/r.git`,
    `https://2130706433:${port}/r.git`,
    `https://0x7f000001:${port}/r.git`,
    `https://0177.0.0.1:${port}/r.git`,
    `https://127.1:${port}/r.git`,
    `https://0.0.0.0:${port}/r.git`,
    `https://0:${port}/r.git`,
    `https://localhost:${port}/r.git`,
    `https://LOCALHOST.:${port}/r.git`,
    `https://127.0.0.1.:${port}/r.git`,
    `ssh://git@2130706433:${port}/r.git`,
    `ssh://git@[::ffff:127.0.0.1%25lo]:${port}/r.git`,
    `ssh://git@localhost:${port}/r.git`,
  ];
}

function gitSpec(url: string): GitSourceSpec {
  return {
    type: 'git',
    url,
    branch: 'main',
    path: null,
    poll_interval_seconds: 0,
    credentials_secret: null,
    push_secret: null,
  };
}

let v4: Awaited<ReturnType<typeof listener>>;
let v6: Awaited<ReturnType<typeof listener>> | undefined;
beforeAll(async () => {
  v4 = await listener('127.0.0.1');
  // The same port on ::1 when this host has IPv6 loopback, so that [::1] and [::] forms would land too.
  v6 = await new Promise<Awaited<ReturnType<typeof listener>> | undefined>((resolve) => {
    let count = 0;
    const server = createServer((socket) => {
      count++;
      socket.end();
    });
    server.once('error', () => resolve(undefined));
    server.listen(v4.port, '::1', () => resolve({ server, port: v4.port, connections: () => count }));
  });
});
afterAll(async () => {
  v4?.server.close();
  v6?.server.close();
  rmSync(scratch, { recursive: true, force: true });
});
const connections = () => v4.connections() + (v6?.connections() ?? 0);

describe('the URL policy', () => {
  it('classifies every internal form as internal, and fails closed on what it cannot read', () => {
    for (const a of [
      '127.0.0.1',
      '0.0.0.0',
      '::',
      '::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:0:7f00:1',
      '::127.0.0.1',
      '64:ff9b::7f00:1',
      '64:ff9b::a00:1',
      '2002:a00:1::',
      '2001::1',
      'fe80::1',
      'fe80::1%eth0',
      '::ffff:127.0.0.1%lo',
      '0177.0.0.1',
      '2130706433',
      '0x7f000001',
      '127.1',
      'not an address',
      '',
    ])
      expect(isInternalAddress(a), a).toBe(true);
    for (const a of ['8.8.8.8', '140.82.112.3', '2606:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808'])
      expect(isInternalAddress(a), a).toBe(false);
  });

  it('reads numeric IPv4 forms as WHATWG and git do, and refuses zone ids as unparseable', () => {
    for (const url of ['https://2130706433/r', 'https://0x7f000001/r', 'https://0177.0.0.1/r', 'https://127.1/r'])
      expect(parseGitEndpoint(url, 'https'), url).toEqual({
        kind: 'network',
        endpoint: { host: '127.0.0.1', port: 443 },
      });
    expect(parseGitEndpoint('git@127.1:a/b.git', 'ssh')).toMatchObject({ endpoint: { host: '127.0.0.1', port: 22 } });
    for (const url of ['https://[::ffff:127.0.0.1%25lo]:1/r', 'https://[fe80::1%25eth0]/r', 'https://a..b/r'])
      expect(parseGitEndpoint(url, 'https').kind, url).toBe('unparseable');
  });

  it('refuses a name that resolves to a private address (real resolution of localhost)', async () => {
    const policy = new SourceUrlPolicy({ allowedHosts: [], ownPorts: [] });
    expect(await policy.check({ host: 'localhost', port: 443 })).toMatchObject({ ok: false, reason: 'internal' });
  });

  it('refuses every form at fetch time before git runs: the loopback listeners see no connection', async () => {
    const policy = new SourceUrlPolicy({ allowedHosts: [], ownPorts: [] });
    const before = connections();
    let n = 0;
    for (const url of hostileUrls(v4.port)) {
      const source = new GitSource({
        spec: gitSpec(url),
        dir: path.join(scratch, `fetch-${n++}`),
        credentials: async () => undefined,
        policy,
      });
      const err = (await source.fetch().catch((e: unknown) => e)) as Error & { reason?: string };
      expect(err.reason, `${url}: ${err.message}`).toBe('URLNotAllowed');
      expect(err.message, url).toMatch(/is not reachable for git sources/);
      expect(err.message, url).not.toMatch(/refused|connect|127\.0\.0\.1 port/i);
    }
    expect(connections() - before).toBe(0);
  });

  it('holds ssh to the checked address too (the name only resolves through the policy)', async () => {
    const policy = new SourceUrlPolicy({
      allowedHosts: ['git.test'],
      ownPorts: [],
      resolve: async (host) => (host === 'git.test' ? ['127.0.0.1'] : []),
    });
    const source = new GitSource({
      spec: gitSpec(`ssh://git@git.test:${v4.port}/r.git`),
      dir: path.join(scratch, 'ssh-pinned'),
      credentials: async () => undefined,
      policy,
    });
    const before = v4.connections();
    const err = (await source.fetch().catch((e: unknown) => e)) as Error & { reason: string };
    expect(err.reason).toBe('FetchFailed');
    expect(err.message).toContain(refusedHostMessage('git.test'));
    expect(v4.connections() - before).toBe(1);
  });

  it('answers a closed port and an open non-git port of an allowed host alike', async () => {
    // git.test does not resolve on this machine: the fetch reaches the listener only through the pinned address.
    const policy = new SourceUrlPolicy({
      allowedHosts: ['git.test'],
      ownPorts: [],
      resolve: async (host) => (host === 'git.test' ? ['127.0.0.1'] : []),
    });
    const closed = await listener('127.0.0.1');
    const closedPort = closed.port;
    await new Promise((resolve) => closed.server.close(resolve));
    const fetchOf = async (port: number, name: string) => {
      const source = new GitSource({
        spec: gitSpec(`http://git.test:${port}/r.git`),
        dir: path.join(scratch, name),
        credentials: async () => undefined,
        policy,
      });
      return (await source.fetch().catch((e: unknown) => e)) as Error & { reason: string };
    };
    const before = v4.connections();
    const open = await fetchOf(v4.port, 'open');
    expect(v4.connections() - before).toBeGreaterThan(0);
    const shut = await fetchOf(closedPort, 'closed');
    expect(open.reason).toBe('FetchFailed');
    expect(shut.reason).toBe('FetchFailed');
    const strip = (m: string) => m.replace(/:\d+\//, ':PORT/').replace(/\(branch main\)/, '');
    expect(strip(open.message)).toBe(strip(shut.message));
    expect(open.message).toContain(refusedHostMessage('git.test'));
  });
});

describe.each(ENGINES.slice(0, 1))('registering hostile git URLs through the API on %s', (engine) => {
  let s: TestServer;
  let teamKey: string;
  beforeAll(async () => {
    s = await startTestServer(engine);
    const team = await s.api('POST', '/teams', { name: 'ssrf', admin_name: 'Team Admin' });
    teamKey = team.body.admin_key.key;
  });
  afterAll(async () => {
    await s?.close();
  });

  it("a team admin's every form of loopback is refused (400) with one message, and nothing connects", async () => {
    const before = connections();
    let n = 0;
    for (const url of hostileUrls(v4.port)) {
      const res = await s.api(
        'POST',
        '/factories',
        { name: `ssrf-${n++}`, source: { type: 'git', url, poll_interval_seconds: 0 } },
        teamKey,
      );
      expect(res.status, `${url}: ${res.text}`).toBe(400);
      expect(res.body.code).toBe('invalid_request');
      expect(res.body.detail, url).toMatch(/^source\.url: .* is not reachable for git sources: hosts must resolve/);
    }
    expect(connections() - before).toBe(0);
  });
});
