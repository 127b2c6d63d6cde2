import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import type { GitUrlKind } from './url.ts';

/** Loopback, unspecified, private, shared (CGNAT), link-local, benchmarking, multicast and reserved ranges. */
const INTERNAL = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 3],
] as const)
  INTERNAL.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  INTERNAL.addSubnet(network, prefix, 'ipv6');

/** An IPv4 address carried in an IPv6 one (`::ffff:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`). */
function embeddedIpv4(address: string): string | undefined {
  const match = /^(?:::ffff:|64:ff9b::)(?:0:)?(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (match) return match[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return undefined;
  const high = Number.parseInt(hex[1]!, 16);
  const low = Number.parseInt(hex[2]!, 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/** Is `address` one a source must not reach (this host, its networks, link-local, multicast, reserved)? */
export function isInternalAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return INTERNAL.check(address, 'ipv4');
  if (family !== 6) return true;
  const v4 = embeddedIpv4(address);
  return v4 !== undefined ? INTERNAL.check(v4, 'ipv4') : INTERNAL.check(address, 'ipv6');
}

export interface GitEndpoint {
  host: string;
  port: number;
}

const DEFAULT_PORTS: Partial<Record<GitUrlKind, number>> = { https: 443, http: 80, ssh: 22 };

/** The host and port a network git URL reaches (`user@host:path` included); undefined for local ones. */
export function gitEndpoint(url: string, kind: GitUrlKind): GitEndpoint | undefined {
  const fallback = DEFAULT_PORTS[kind];
  if (fallback === undefined) return undefined;
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    const scp = /^[^@]+@([^:]+):/.exec(url);
    return scp ? { host: scp[1]!.toLowerCase(), port: fallback } : undefined;
  }
  try {
    const parsed = new URL(url);
    const host = parsed.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    return host ? { host, port: parsed.port ? Number(parsed.port) : fallback } : undefined;
  } catch {
    return undefined;
  }
}

export interface UrlPolicyOptions {
  /** Host names (or `host:port`) the instance admin allows although they resolve to internal addresses. */
  allowedHosts: readonly string[];
  /** This server's own ports: never reached on an internal address, allowed host or not. */
  ownPorts: readonly number[];
  /** Name resolution (getaddrinfo, as git's own); replaceable in tests. */
  resolve?: (host: string) => Promise<string[]>;
}

export type EndpointCheck =
  | { ok: true; addresses: string[] }
  | { ok: false; reason: 'internal' | 'own-port'; address: string }
  | { ok: false; reason: 'unresolved'; cause: string };

async function systemResolve(host: string): Promise<string[]> {
  const answers = await lookup(host, { all: true, verbatim: true });
  return answers.map((a) => a.address);
}

/**
 * Which hosts a git source may reach: any whose every address is public, plus the hosts the instance admin
 * allows; never this server's own ports. Checked at registration and again before every fetch.
 */
export class SourceUrlPolicy {
  readonly #allowed: ReadonlySet<string>;
  readonly #ownPorts: ReadonlySet<number>;
  readonly #resolve: (host: string) => Promise<string[]>;

  constructor(options: UrlPolicyOptions) {
    this.#allowed = new Set(options.allowedHosts.map((h) => h.toLowerCase()));
    this.#ownPorts = new Set(options.ownPorts);
    this.#resolve = options.resolve ?? systemResolve;
  }

  #isAllowed(endpoint: GitEndpoint): boolean {
    return this.#allowed.has(endpoint.host) || this.#allowed.has(`${endpoint.host}:${endpoint.port}`);
  }

  async check(endpoint: GitEndpoint): Promise<EndpointCheck> {
    let addresses: string[];
    if (isIP(endpoint.host)) addresses = [endpoint.host];
    else {
      try {
        addresses = await this.#resolve(endpoint.host);
      } catch (err) {
        return { ok: false, reason: 'unresolved', cause: (err as NodeJS.ErrnoException).code ?? String(err) };
      }
      if (addresses.length === 0) return { ok: false, reason: 'unresolved', cause: 'no address' };
    }
    const allowed = this.#isAllowed(endpoint);
    for (const address of addresses) {
      if (!isInternalAddress(address)) continue;
      if (this.#ownPorts.has(endpoint.port)) return { ok: false, reason: 'own-port', address };
      if (!allowed) return { ok: false, reason: 'internal', address };
    }
    return { ok: true, addresses };
  }
}

/** The one answer for a refused host: it never says which address or port was found. */
export function refusedHostMessage(endpoint: GitEndpoint): string {
  return `source.url: ${endpoint.host} is not reachable for git sources: hosts must resolve only to public addresses (the instance admin may allow a host with AGENTYARD_SOURCE_ALLOWED_HOSTS)`;
}

/** The policy of a server: its allowed hosts (AGENTYARD_SOURCE_ALLOWED_HOSTS) and its own port. */
export function sourceUrlPolicyFor(config: { sourceAllowedHosts: readonly string[]; port: number }): SourceUrlPolicy {
  return new SourceUrlPolicy({ allowedHosts: config.sourceAllowedHosts, ownPorts: [config.port] });
}
