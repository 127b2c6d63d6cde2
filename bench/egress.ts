/**
 * What the egress proxy adds per connection (not a test): figures for docs/governance.md, "Egress".
 *
 *   node bench/egress.ts [--connections 500]
 *
 * A TCP service on loopback answers one byte with one byte. Each round opens a connection to it directly, and
 * one through the path an agent's connection takes: socat's relay (as inside the sandbox, here on a loopback
 * port of the host) to the proxy's unix socket, a CONNECT judged by the policy, the proxy's dial. The time is
 * from the connect to the service's answer. The service's address is made an exception of the policy (the
 * proxy refuses loopback otherwise). Target: the proxy adds at most 5 ms at p50.
 */
import { spawn } from 'node:child_process';
import { createConnection, createServer } from 'node:net';
import type { Socket } from 'node:net';
import { parseArgs } from 'node:util';
import { startEgressProxy } from '../src/execution/egress/proxy.ts';

const { values } = parseArgs({ options: { connections: { type: 'string', default: '500' } } });
const rounds = Number(values.connections);

const service = createServer((s) => s.once('data', () => s.end('y')));
await new Promise<void>((r) => service.listen(0, '127.0.0.1', r));
const port = (service.address() as { port: number }).port;

let records = 0;
const proxy = await startEgressProxy({
  policy: { mode: 'public' },
  exceptions: [{ host: '127.0.0.1', port }],
  onRecord: () => {
    records += 1;
  },
});

// the relay's port: a free one, found by binding port 0 (a benchmark, not a test)
const probe = createServer();
await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
const relayPort = (probe.address() as { port: number }).port;
await new Promise<void>((r) => probe.close(() => r()));
const relay = spawn(
  'socat',
  [`TCP4-LISTEN:${relayPort},bind=127.0.0.1,fork,reuseaddr,backlog=4096`, `UNIX-CONNECT:${proxy.socketPath}`],
  { stdio: 'ignore' },
);
await new Promise((r) => setTimeout(r, 300));

function answer(socket: Socket, first: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let buf = '';
    let tunnelled = first === '';
    socket.on('data', (d) => {
      buf += d.toString('latin1');
      if (!tunnelled && buf.includes('\r\n\r\n')) {
        if (!buf.startsWith('HTTP/1.1 200')) return reject(new Error(buf.split('\r\n')[0]));
        tunnelled = true;
        buf = '';
        socket.write('x');
        return;
      }
      if (tunnelled && buf.length > 0) {
        socket.destroy();
        resolve();
      }
    });
    socket.on('error', reject);
    socket.on('connect', () => socket.write(first || 'x'));
  });
}

async function direct(): Promise<number> {
  const t = performance.now();
  await answer(createConnection({ host: '127.0.0.1', port }), '');
  return performance.now() - t;
}

async function proxied(): Promise<number> {
  const t = performance.now();
  const s = createConnection({ host: '127.0.0.1', port: relayPort });
  await answer(s, `CONNECT 127.0.0.1:${port} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
  return performance.now() - t;
}

const d: number[] = [];
const p: number[] = [];
for (let i = 0; i < 20; i++) {
  await direct();
  await proxied();
}
for (let i = 0; i < rounds; i++) {
  d.push(await direct());
  p.push(await proxied());
}
const pct = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * q)]!;
const ms = (x: number) => `${x.toFixed(2)} ms`;
console.log(`connections: ${rounds} direct, ${rounds} through the egress proxy (${records} egress records)`);
console.log(`direct   p50 ${ms(pct(d, 0.5))}  p90 ${ms(pct(d, 0.9))}  p99 ${ms(pct(d, 0.99))}`);
console.log(`proxied  p50 ${ms(pct(p, 0.5))}  p90 ${ms(pct(p, 0.9))}  p99 ${ms(pct(p, 0.99))}`);
const added = pct(p, 0.5) - pct(d, 0.5);
console.log(
  `added per connection at p50: ${ms(added)} (ratio ${(pct(p, 0.5) / pct(d, 0.5)).toFixed(1)}x; target ≤ 5 ms: ${added <= 5 ? 'met' : 'NOT met'})`,
);
relay.kill();
await proxy.close();
service.close();
