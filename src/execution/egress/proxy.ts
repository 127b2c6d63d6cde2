/**
 * The egress proxy of one execution: an HTTP proxy (CONNECT tunnels and plain requests) listening on a unix
 * socket that is bound into the agent's sandbox, where a relay makes it `127.0.0.1:3128`. It is
 * `@anthropic-ai/sandbox-runtime`'s proxy server, with our policy (policy.ts) as its filter and its
 * resolved-address guard as its name resolution: a name is resolved once, non-public answers are dropped, and
 * the address that passed is the address dialled. Every connection is reported as an `egress` event.
 */
import { lookup } from 'node:dns/promises';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { createHttpProxyServer } from '@anthropic-ai/sandbox-runtime/dist/sandbox/http-proxy.js';
import {
  createResolvedAddressGuard,
  isResolvedAddressDenied,
} from '@anthropic-ai/sandbox-runtime/dist/sandbox/resolved-address-guard.js';
import ipaddr from 'ipaddr.js';
import { DENIED_RESOLVED_RANGES, judge } from './policy.ts';
import type { NetworkPolicy, ServerException } from './policy.ts';

/** One connection the agent asked for, as its `egress` event says it. */
export interface EgressRecord {
  host: string;
  port: number;
  allowed: boolean;
  /** Why it was refused (or, for the server's own API, why it was let through). */
  reason?: string;
  /** Bytes the agent sent and received through it (0 when refused). */
  bytes_sent: number;
  bytes_received: number;
}

export interface EgressProxyOptions {
  policy: NetworkPolicy;
  /** Reachable whatever the policy and the address (the server's own API, the built-in agent's model). */
  exceptions: readonly ServerException[];
  onRecord(record: EgressRecord): void;
}

export interface EgressProxy {
  /** The directory holding the proxy's socket (`proxy.sock`), to bind into the sandbox. */
  dir: string;
  socketPath: string;
  close(): Promise<void>;
}

export const PROXY_SOCKET_NAME = 'proxy.sock';

interface Pending {
  record: EgressRecord;
  socket: Duplex;
  sent: number;
  received: number;
  done: boolean;
}

function counters(socket: Duplex): { sent: number; received: number } {
  const s = socket as Duplex & { bytesRead?: number; bytesWritten?: number };
  return { sent: s.bytesRead ?? 0, received: s.bytesWritten ?? 0 };
}

/** The server's addresses the guard lets its public URL's host resolve to (`addr:port` literals). */
async function serverCarveOut(server: ServerException): Promise<string[]> {
  const addresses = ipaddr.isValid(server.host)
    ? [server.host]
    : await lookup(server.host, { all: true }).then(
        (found) => found.map((a) => a.address),
        () => [],
      );
  return addresses.map((a) => (a.includes(':') ? `[${a}]:${server.port}` : `${a}:${server.port}`));
}

export async function startEgressProxy(options: EgressProxyOptions): Promise<EgressProxy> {
  const dir = await mkdtemp(path.join(tmpdir(), 'agentyard-egress-'));
  await chmod(dir, 0o700);
  const socketPath = path.join(dir, PROXY_SOCKET_NAME);
  const guard = createResolvedAddressGuard({
    allowedDomains: (await Promise.all(options.exceptions.map(serverCarveOut))).flat(),
    deniedResolvedAddresses: DENIED_RESOLVED_RANGES,
  });
  const pending: Pending[] = [];
  const bySocket = new WeakMap<Duplex, Pending>();

  const finish = (p: Pending): void => {
    if (p.done) return;
    p.done = true;
    const now = counters(p.socket);
    p.record.bytes_sent = p.record.allowed ? now.sent - p.sent : 0;
    p.record.bytes_received = p.record.allowed ? now.received - p.received : 0;
    pending.splice(pending.indexOf(p), 1);
    options.onRecord(p.record);
  };

  const filter = (port: number, host: string, socket: Duplex, _cmd?: string, explain?: (r: string) => void) => {
    const verdict = judge(options.policy, host, port, options.exceptions);
    const record: EgressRecord = { host, port, allowed: verdict.allowed, bytes_sent: 0, bytes_received: 0 };
    if (verdict.reason) record.reason = verdict.reason;
    if (!verdict.allowed) {
      explain?.(verdict.reason);
      options.onRecord(record);
      return false;
    }
    // a kept-alive connection carrying another request: the earlier one's bytes end here
    const previous = bySocket.get(socket);
    if (previous) finish(previous);
    const start = counters(socket);
    const p: Pending = { record, socket, sent: start.sent, received: start.received, done: false };
    pending.push(p);
    bySocket.set(socket, p);
    socket.once('close', () => finish(p));
    return true;
  };

  const lookupFor = (port: number) => {
    const guarded = guard.lookupFor(port);
    const wrapped: typeof guarded = (hostname, opts, callback) =>
      guarded(hostname, opts, (err, ...rest) => {
        if (err && isResolvedAddressDenied(err)) {
          // the name was allowed but resolves to a non-public address: that connection is refused
          const p = pending.find((x) => !x.done && x.record.port === port && x.record.allowed);
          if (p) {
            p.record.allowed = false;
            p.record.reason = `${hostname} ${err.reason} (${err.addresses.join(', ')})`;
            finish(p);
          }
        }
        (callback as (...args: unknown[]) => void)(err, ...rest);
      });
    return wrapped;
  };

  const server: Server = createHttpProxyServer({ filter, lookupFor });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // the sandbox's user is another uid on some hosts: the socket is reachable only through the 0700 directory
  await chmod(socketPath, 0o666);
  return {
    dir,
    socketPath,
    close: async () => {
      // tunnels end with the sandbox; one a stray process holds open does not hold the run up
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 2_000);
        timer.unref();
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
        server.closeAllConnections?.();
      });
      for (const p of [...pending]) finish(p);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
