import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import type { GitUrlKind } from './url.ts';

/** An IPv4 address's verdict: only ipaddr.js's `unicast` (none of its special ranges) is public. */
function isPublicV4(address: ipaddr.IPv4): boolean {
  return address.range() === 'unicast';
}

/** The IPv4 address in bits `from`..`from+32` of an IPv6 one (6to4, NAT64, SIIT). */
function embeddedV4(address: ipaddr.IPv6, fromPart: number): ipaddr.IPv4 {
  const parts = address.parts;
  const high = parts[fromPart]!;
  const low = parts[fromPart + 1]!;
  return new ipaddr.IPv4([high >> 8, high & 255, low >> 8, low & 255]);
}

/**
 * Is `address` one a source must not reach? Fails closed: text that is not exactly one IP address (a zone id
 * such as `fe80::1%eth0` included), a range ipaddr.js does not call `unicast`, or a form whose embedded IPv4
 * address is not public (IPv4-mapped `::ffff:127.0.0.1`, IPv4-compatible `::127.0.0.1`, NAT64 `64:ff9b::`,
 * SIIT `::ffff:0:`, 6to4 `2002::`) is internal; Teredo, which hides its address, is too.
 */
export function isInternalAddress(address: string): boolean {
  if (!ipaddr.isValid(address) || address.includes('%')) return true;
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return true;
  }
  if (parsed.kind() === 'ipv4') {
    // ipaddr.js accepts `0x7f.1` and `2130706433`; only dotted decimal reaches here from a resolver or URL.
    return !ipaddr.IPv4.isValidFourPartDecimal(address) || !isPublicV4(parsed as ipaddr.IPv4);
  }
  const v6 = parsed as ipaddr.IPv6;
  if (v6.zoneId !== undefined) return true;
  const range = v6.range();
  if (range === 'ipv4Mapped' || range === 'rfc6145' || range === 'rfc6052') return !isPublicV4(embeddedV4(v6, 6));
  if (range === '6to4') return !isPublicV4(embeddedV4(v6, 1));
  // IPv4-compatible (::/96, deprecated): never a real destination.
  if (v6.parts.slice(0, 6).every((p) => p === 0)) return true;
  return range !== 'unicast';
}

export interface GitEndpoint {
  /** The host as git will be told it: a lower-case DNS name, dotted IPv4, or an IPv6 address without brackets. */
  host: string;
  port: number;
}

/** Where a git URL leads: nowhere on the network (local kinds), a host the policy checks, or a host it refuses. */
export type EndpointParse =
  | { kind: 'local' }
  | { kind: 'network'; endpoint: GitEndpoint }
  | { kind: 'unparseable'; host: string };

const DEFAULT_PORTS: Partial<Record<GitUrlKind, number>> = { https: 443, http: 80, ssh: 22 };

/** A DNS name as curl, ssh and getaddrinfo all read the same way: letters, digits, `-`, `_`, dots. */
const DNS_NAME =
  /^(?=.{1,253}\.?$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/;

/**
 * The host of a URL's authority, normalised by the WHATWG parser (which turns `2130706433`, `0x7f000001`,
 * `0177.0.0.1` and `127.1` into `127.0.0.1`, and refuses zone ids); undefined for anything it cannot read
 * as a DNS name or a single IP address.
 */
function normalisedHost(hostname: string): string | undefined {
  if (hostname.startsWith('[')) {
    const inner = hostname.slice(1, -1);
    return hostname.endsWith(']') && ipaddr.IPv6.isValid(inner) && !inner.includes('%') ? inner : undefined;
  }
  if (ipaddr.IPv4.isValidFourPartDecimal(hostname)) return hostname;
  if (/^[0-9.]+$/.test(hostname) || /^0x/i.test(hostname)) return undefined;
  return DNS_NAME.test(hostname) ? hostname : undefined;
}

/**
 * The host and port a git URL reaches (`user@host:path` included). A network URL whose host cannot be read
 * is `unparseable`, and the policy refuses it: nothing git could connect to slips past unchecked.
 */
export function parseGitEndpoint(url: string, kind: GitUrlKind): EndpointParse {
  const fallback = DEFAULT_PORTS[kind];
  if (fallback === undefined) return { kind: 'local' };
  let raw: string;
  let port = fallback;
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    // scp-like `user@host:path`, or `user@[host]:path`
    const scp = /^[^@/]+@(\[[^\]]*\]|[^:/[\]]+):/.exec(url);
    if (!scp) return { kind: 'unparseable', host: url.split(':')[0] ?? url };
    raw = scp[1]!;
  } else {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      const shown = /^[a-z][a-z0-9+.-]*:\/\/(?:[^/?#]*@)?(\[[^\]]*\]|[^:/?#]*)/i.exec(url)?.[1];
      return { kind: 'unparseable', host: shown ?? url };
    }
    // ssh:// hosts are opaque to the WHATWG parser: the http:// parse below gives them its IPv4 normalisation.
    raw = parsed.hostname;
    if (parsed.port) port = Number(parsed.port);
  }
  let hostname: string;
  try {
    hostname = new URL(`http://${raw}/`).hostname;
  } catch {
    return { kind: 'unparseable', host: raw };
  }
  const host = normalisedHost(hostname.toLowerCase());
  if (!host || !Number.isInteger(port) || port < 1 || port > 65535) return { kind: 'unparseable', host: raw };
  return { kind: 'network', endpoint: { host, port } };
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

const LOCALHOST = /(?:^|\.)localhost\.?$/;

async function systemResolve(host: string): Promise<string[]> {
  const answers = await lookup(host, { all: true, verbatim: true });
  return answers.map((a) => a.address);
}

/**
 * Which hosts a git source may reach: any whose every address is public, plus the hosts the instance admin
 * allows; never this server's own ports. Checked at registration and again before every fetch, and the fetch
 * connects only to the addresses this check saw (see GitSource).
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
    // RFC 6761: curl answers `localhost` and `*.localhost` itself, without asking the resolver.
    if (LOCALHOST.test(endpoint.host) && !this.#isAllowed(endpoint))
      return { ok: false, reason: 'internal', address: endpoint.host };
    if (ipaddr.isValid(endpoint.host)) addresses = [endpoint.host];
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

/**
 * The one answer for a host a source may not use or cannot reach: refused by the policy, unparseable,
 * unresolved, or not answering as a git server. It never says which address, port or cause was found.
 */
export function refusedHostMessage(host: string): string {
  return `source.url: ${host} is not reachable for git sources: hosts must resolve only to public addresses and answer as a git server (the instance admin may allow a host with AGENTYARD_SOURCE_ALLOWED_HOSTS)`;
}

/** The policy of a server: its allowed hosts (AGENTYARD_SOURCE_ALLOWED_HOSTS) and its own port. */
export function sourceUrlPolicyFor(config: { sourceAllowedHosts: readonly string[]; port: number }): SourceUrlPolicy {
  return new SourceUrlPolicy({ allowedHosts: config.sourceAllowedHosts, ownPorts: [config.port] });
}
