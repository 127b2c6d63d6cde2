/**
 * The egress proxy on its own (a real proxy on a real unix socket, real CONNECTs): the policy decides by name
 * (an allow-listed name passes, another is refused and reported), non-public addresses are refused in every
 * spelling, a name resolving to loopback is refused after resolution, and the exception reaches its address.
 */
import { lookup } from 'node:dns/promises';
import { connect, createServer } from 'node:net';
import { hostname } from 'node:os';
import type { Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { judge, networkPolicyFrom, nonPublicAddress } from '../../src/execution/egress/policy.ts';
import type { NetworkPolicy } from '../../src/execution/egress/policy.ts';
import { startEgressProxy } from '../../src/execution/egress/proxy.ts';
import type { EgressRecord } from '../../src/execution/egress/proxy.ts';

/** Sends a CONNECT over the proxy's socket; resolves with the status line of its answer. */
function tunnel(socketPath: string, authority: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(socketPath);
    let buf = '';
    s.on('connect', () => s.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`));
    s.on('data', (d) => {
      buf += d.toString('latin1');
      if (buf.includes('\r\n')) {
        s.destroy();
        resolve(buf.split('\r\n')[0]!);
      }
    });
    s.on('error', reject);
    s.on('close', () => resolve(buf.split('\r\n')[0] ?? ''));
  });
}

describe('the egress policy', () => {
  it('refuses non-public addresses in every spelling, and names outside an allow list', () => {
    const pub: NetworkPolicy = { mode: 'public' };
    for (const host of [
      '127.0.0.1',
      '127.1',
      '0x7f000001',
      '2130706433',
      '017700000001',
      '::1',
      '[::ffff:127.0.0.1]',
      '::ffff:7f00:1',
      '64:ff9b::7f00:1',
      '2002:7f00:1::',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '100.64.0.1',
      '169.254.169.254',
      'fe80::1',
      'fd00::1',
      '224.0.0.1',
      'ff02::1',
      '0.0.0.0',
      '255.255.255.255',
      'localhost',
      'db.localhost',
    ])
      expect(judge(pub, host, 80).allowed, host).toBe(false);
    expect(judge(pub, '8.8.8.8', 443).allowed).toBe(true);
    expect(judge(pub, 'example.org', 443).allowed).toBe(true);
    const allow = networkPolicyFrom({ allow: ['github.com', '*.npmjs.org'] });
    expect(judge(allow, 'github.com', 443).allowed).toBe(true);
    expect(judge(allow, 'GitHub.com.', 443).allowed).toBe(true);
    expect(judge(allow, 'registry.npmjs.org', 443).allowed).toBe(true);
    expect(judge(allow, 'npmjs.org', 443)).toMatchObject({ allowed: false, reason: /network.allow/ });
    expect(judge(allow, 'api.github.com', 443).allowed).toBe(false);
    expect(judge(allow, 'evil-github.com', 443).allowed).toBe(false);
    expect(judge(networkPolicyFrom('none'), 'github.com', 443).allowed).toBe(false);
    // the exception: the server's own host and port, nothing else of that host
    const server = [{ host: '127.0.0.1', port: 8080 }];
    expect(judge(networkPolicyFrom('none'), '127.0.0.1', 8080, server).allowed).toBe(true);
    expect(judge(pub, '127.0.0.1', 8081, server).allowed).toBe(false);
  });
});

describe('the egress proxy', () => {
  let service: Server;
  let port: number;
  beforeAll(async () => {
    service = createServer((s) => s.end('hello'));
    await new Promise<void>((r) => service.listen(0, '127.0.0.1', r));
    port = (service.address() as { port: number }).port;
  });
  afterAll(() => {
    service.close();
  });

  async function withProxy(policy: NetworkPolicy, run: (socketPath: string) => Promise<void>): Promise<EgressRecord[]> {
    const records: EgressRecord[] = [];
    const proxy = await startEgressProxy({
      policy,
      exceptions: [{ host: '127.0.0.1', port }],
      onRecord: (r) => records.push(r),
    });
    try {
      await run(proxy.socketPath);
    } finally {
      await proxy.close();
    }
    return records;
  }

  it('lets an allow-listed name through the policy and refuses and reports another', async () => {
    const records = await withProxy(networkPolicyFrom({ allow: ['allowed.invalid'] }), async (sock) => {
      // allowed by the policy; the name does not resolve (.invalid), so the dial fails after the decision
      expect(await tunnel(sock, 'allowed.invalid:443')).not.toMatch(/ 403 /);
      expect(await tunnel(sock, 'other.invalid:443')).toMatch(/ 403 /);
    });
    expect(records).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ host: 'allowed.invalid', port: 443, allowed: true }),
        expect.objectContaining({
          host: 'other.invalid',
          port: 443,
          allowed: false,
          reason: expect.stringMatching(/network.allow/),
        }),
      ]),
    );
  });

  it('refuses a loopback name, and an allowed name that resolves to a non-public address', async () => {
    // this host's own name: on these machines /etc/hosts points it at 127.0.0.1 (or a private address)
    const name = hostname().toLowerCase();
    const resolved = await lookup(name, { all: true }).catch(() => []);
    const nonPublic = resolved.length > 0 && resolved.every((a) => nonPublicAddress(a.address) !== undefined);
    const records = await withProxy(networkPolicyFrom({ allow: ['localhost', name] }), async (sock) => {
      expect(await tunnel(sock, `localhost:${port}`)).toMatch(/ 403 /);
      // (not the exception's port: a name for the exception's own address and port reaches just that)
      if (nonPublic) expect(await tunnel(sock, `${name}:${port + 1}`)).toMatch(/ 403 /);
    });
    expect(records[0]).toMatchObject({ host: 'localhost', allowed: false, reason: /loopback name/ });
    if (nonPublic)
      expect(records[1]).toMatchObject({ host: name, port: port + 1, allowed: false, reason: /resolved to/ });
  });

  it('tunnels to the exception and counts its bytes', async () => {
    const records = await withProxy({ mode: 'none' }, async (sock) => {
      expect(await tunnel(sock, `127.0.0.1:${port}`)).toBe('HTTP/1.1 200 Connection Established');
      expect(await tunnel(sock, `127.0.0.1:${port + 1}`)).toMatch(/ 403 /);
    });
    const allowed = records.find((r) => r.allowed)!;
    expect(allowed).toMatchObject({ host: '127.0.0.1', port, reason: /exception/ });
    expect(records.find((r) => !r.allowed)).toMatchObject({ host: '127.0.0.1', port: port + 1 });
  });
});
