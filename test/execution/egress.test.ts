/**
 * The egress policy on real network namespaces: a `command` agent (a shell script using curl) runs under
 * bubblewrap with its own network namespace, and its only way out is the execution's egress proxy. It cannot
 * reach a loopback listener of the host (directly or through the proxy), the host's other addresses or the
 * cloud metadata address; it reaches the server's own address (its /readyz, through the exception) and the
 * run's events report each connection as an `egress` event. A run's runner's `network` applies: an allow list
 * lets its name through and refuses and reports another; `none` leaves the agent no proxy and no way out.
 */
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { networkInterfaces } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENTS, createRun, eventsOf, startExecServer, waitForState } from './support.ts';
import type { ExecServer } from './support.ts';

const PROBE = path.join(AGENTS, 'egress-probe.sh');

/** A non-loopback IPv4 address of this host, when it has one. */
function hostAddress(): string | undefined {
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return undefined;
}

describe('egress of a sandboxed agent', () => {
  let s: ExecServer;
  let listener: Server;
  let port: number;
  let accepted = 0;
  beforeAll(async () => {
    // a host service on every address: what the agent must not reach
    listener = createServer((socket) => {
      accepted += 1;
      socket.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok');
    });
    await new Promise<void>((resolve) => listener.listen(0, '0.0.0.0', resolve));
    port = (listener.address() as { port: number }).port;
    s = await startExecServer('pglite', { settings: { bins: { command: PROBE } as never } });
  });
  afterAll(async () => {
    await s?.close();
    listener?.close();
  });

  it('reaches only the server through the proxy; loopback, host and metadata addresses are refused and reported', async () => {
    const server = new URL(s.url);
    const other = hostAddress();
    const lines = [
      `EGRESS direct-loopback direct http://127.0.0.1:${port}/`,
      `EGRESS proxied-loopback tunnel http://127.0.0.1:${port}/`,
      `EGRESS proxied-loopback-plain proxy http://127.0.0.1:${port}/`,
      `EGRESS proxied-loopback-hex tunnel http://0x7f000001:${port}/`,
      `EGRESS proxied-mapped tunnel http://[::ffff:127.0.0.1]:${port}/`,
      `EGRESS metadata tunnel http://169.254.169.254/latest/meta-data/`,
      `EGRESS localhost-name tunnel http://localhost:${port}/`,
      `EGRESS server-health proxy ${s.url}/readyz`,
      `EGRESS server-health-tunnel tunnel ${s.url}/readyz`,
      ...(other
        ? [`EGRESS direct-host direct http://${other}:${port}/`, `EGRESS proxied-host tunnel http://${other}:${port}/`]
        : []),
    ];
    const runId = await createRun(s, {
      prompt: `probe\n${lines.join('\n')}\n`,
      config: { harness: { type: 'command' } },
    });
    const run = await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR']);
    const events = await eventsOf(s, runId);
    expect(run.state, JSON.stringify(events.slice(-5))).toBe('SUCCEEDED');
    const said = new Map<string, string[]>();
    for (const e of events)
      if (e.type === 'message') {
        const [name, ...rest] = String(e.data.text).split(' ');
        said.set(name!, rest);
      }
    // the contract: the environment names the proxy, reachable inside the sandbox
    expect(said.get('proxy-env')).toEqual(['http://127.0.0.1:3128', 'http://127.0.0.1:3128']);
    // no route to the host's loopback from the agent's own namespace
    expect(said.get('direct-loopback')![0]).toBe('000');
    for (const name of ['proxied-loopback', 'proxied-loopback-hex', 'proxied-mapped', 'metadata', 'localhost-name']) {
      // the proxy answers the CONNECT 403, and curl fails
      expect(said.get(name), name).toEqual(['403-000', '56']);
    }
    expect(said.get('proxied-loopback-plain')![0]).toBe('403');
    expect(said.get('server-health')).toEqual(['200', '0']);
    expect(said.get('server-health-tunnel')).toEqual(['200-200', '0']);
    if (other) {
      expect(said.get('direct-host')![0]).toBe('000');
      expect(said.get('proxied-host')).toEqual(['403-000', '56']);
    }
    expect(accepted).toBe(0);

    const egress = events.filter((e) => e.type === 'egress').map((e) => e.data);
    const refused = (host: string) => egress.find((e) => e.host === host && e.port === port && e.allowed === false);
    expect(refused('127.0.0.1')?.reason).toMatch(/loopback/);
    expect(egress.find((e) => e.host === '169.254.169.254' && !e.allowed)?.reason).toMatch(/link-local/);
    if (other) expect(refused(other)).toBeDefined();
    const toServer = egress.filter((e) => e.host === server.hostname && e.port === Number(server.port));
    expect(toServer.length, JSON.stringify(egress)).toBe(2);
    for (const e of toServer) {
      expect(e.allowed).toBe(true);
      expect(e.bytes_received).toBeGreaterThan(0);
    }
    const status = events.filter((e) => e.type === 'status').map((e) => e.data);
    expect(status.some((d) => /network: public hosts, only through the egress proxy/.test(String(d.limits)))).toBe(
      true,
    );
    expect(status.find((d) => d.egress)?.egress).toMatchObject({ allowed: 2 });
  });

  it("applies the run's runner's network policy: an allow list by name, and none", async () => {
    const db = s.server.ctx.db;
    const lines = [
      'EGRESS allowed-name tunnel http://allowed.invalid/',
      'EGRESS other-name tunnel http://other.invalid/',
      'EGRESS public-ip tunnel http://203.0.113.7/',
    ].join('\n');
    // held for a worker that never connects until the factory is attached, then handed to this server
    const allowRun = await createRun(s, {
      prompt: `probe\n${lines}\n`,
      config: { harness: { type: 'command' }, worker_host: 'nobody', runner_id: 'allow' },
    });
    const noneRun = await createRun(s, {
      prompt: `probe\n${lines}\n`,
      config: { harness: { type: 'command' }, worker_host: 'nobody', runner_id: 'closed' },
    });
    const team = (await db.query<{ team_id: string }>('SELECT team_id FROM runs WHERE id = $1', [allowRun])).rows[0]!;
    const definition = {
      runners: [
        { name: 'allow', platform: { os: 'linux' }, network: { allow: ['allowed.invalid'] } },
        { name: 'closed', platform: { os: 'linux' }, network: 'none' },
      ],
    };
    await db.query(
      `INSERT INTO factories (id, team_id, name, source, definition) VALUES ('fac_egress', $1, 'egress', '{"type":"managed"}', $2)`,
      [team.team_id, JSON.stringify(definition)],
    );
    await db.query(
      `UPDATE runs SET factory_id = 'fac_egress', config = config - 'worker_host', worker_host = NULL WHERE id = ANY($1::text[])`,
      [[allowRun, noneRun]],
    );
    const allowed = await waitForState(s, allowRun, ['SUCCEEDED', 'FAILED', 'ERROR']);
    expect(allowed.state).toBe('SUCCEEDED');
    const egress = (await eventsOf(s, allowRun)).filter((e) => e.type === 'egress').map((e) => e.data);
    expect(egress.find((e) => e.host === 'allowed.invalid')).toMatchObject({ allowed: true });
    expect(egress.find((e) => e.host === 'other.invalid')).toMatchObject({ allowed: false, reason: /network.allow/ });
    expect(egress.find((e) => e.host === '203.0.113.7')).toMatchObject({ allowed: false });

    const closed = await waitForState(s, noneRun, ['SUCCEEDED', 'FAILED', 'ERROR']);
    expect(closed.state).toBe('SUCCEEDED');
    const events = await eventsOf(s, noneRun);
    const said = events.filter((e) => e.type === 'message').map((e) => String(e.data.text));
    // no proxy in its environment, and nothing gets out
    expect(said).toContain('proxy-env  ');
    expect(said.find((t) => t.startsWith('allowed-name '))).toMatch(/^allowed-name 000-000 (5|6|7)$/);
    expect(events.some((e) => e.type === 'status' && /network: none/.test(String(e.data.limits)))).toBe(true);
  });
});
