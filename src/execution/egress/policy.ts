/**
 * The egress policy of an execution: which hosts its agent may reach through the egress proxy. A runner file's
 * `network` key (an Agentyard extension) sets it: `none` allows nothing, `{allow: [...]}` only the hosts named,
 * no key every public host. Whatever the policy, loopback, private, link-local (cloud metadata), multicast and
 * other non-public addresses are refused in every spelling, with one exception: the server's own address and
 * port (its public URL), which the agent's run token is for. See docs/governance.md.
 */
import ipaddr from 'ipaddr.js';
import { canonicalizeHost } from '@anthropic-ai/sandbox-runtime/dist/sandbox/parent-proxy.js';
import { allowEntryProblem } from '../../definitions/network-policy.ts';

export type NetworkPolicy = { mode: 'public' } | { mode: 'none' } | { mode: 'allow'; hosts: string[] };

export const DEFAULT_NETWORK_POLICY: NetworkPolicy = { mode: 'public' };

/** A runner's `network` read back from a stored definition; anything unusable keeps the default. */
export function networkPolicyFrom(value: unknown): NetworkPolicy {
  if (value === 'none') return { mode: 'none' };
  if (!value || typeof value !== 'object' || Array.isArray(value)) return DEFAULT_NETWORK_POLICY;
  const allow = (value as Record<string, unknown>).allow;
  if (!Array.isArray(allow)) return DEFAULT_NETWORK_POLICY;
  const hosts = allow
    .filter((h): h is string => typeof h === 'string' && allowEntryProblem(h) === undefined)
    .map((h) => h.trim().toLowerCase());
  return { mode: 'allow', hosts };
}

/** "public hosts", "no network", "only github.com, *.npmjs.org": the policy for a status message. */
export function policyText(policy: NetworkPolicy): string {
  if (policy.mode === 'public') return 'public hosts';
  if (policy.mode === 'none') return 'no network';
  return policy.hosts.length ? `only ${policy.hosts.join(', ')}` : 'no host (network.allow is empty)';
}

/**
 * An address the agent may reach whatever the policy and whatever the address: the server's own (its public
 * URL's host and port), the built-in agent's model endpoint, and those the operator lists
 * (`AGENTYARD_EGRESS_ALLOW_ADDRESSES`).
 */
export interface ServerException {
  host: string;
  port: number;
}

/** The host and port of a URL (`http://h:p/...`) or of `host:port`; undefined when it names neither. */
export function serverException(publicUrl: string | undefined): ServerException | undefined {
  if (!publicUrl) return undefined;
  try {
    const url = new URL(publicUrl.includes('://') ? publicUrl : `http://${publicUrl}`);
    const host = canonicalizeHost(url.hostname.replace(/^\[|\]$/g, ''));
    if (!host) return undefined;
    const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
    return { host, port };
  } catch {
    return undefined;
  }
}

export type Verdict = { allowed: true; reason?: string } | { allowed: false; reason: string };

/** The class of a non-public address ("a loopback address"), or undefined for a public unicast one. */
export function nonPublicAddress(address: string): string | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    // process() reads an IPv4-mapped IPv6 address as its IPv4 address
    parsed = ipaddr.process(address);
  } catch {
    return 'an unparsable address';
  }
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    // NAT64, 6to4, Teredo and IPv4-compatible forms carry an IPv4 address that is judged too
    const range = v6.range();
    if (range === 'rfc6052' || range === 'rfc6145' || (range as string) === 'ipv4Compatible') {
      const bytes = v6.toByteArray().slice(12);
      const inner = nonPublicAddress(bytes.join('.'));
      if (inner) return inner;
    }
    if (range === '6to4') {
      const inner = nonPublicAddress(v6.toByteArray().slice(2, 6).join('.'));
      if (inner) return inner;
    }
    if (range === 'unicast' || range === 'rfc6052' || range === '6to4' || range === 'teredo') return undefined;
    return describe(range);
  }
  const range = parsed.range();
  return range === 'unicast' ? undefined : describe(range);
}

function describe(range: string): string {
  switch (range) {
    case 'loopback':
      return 'a loopback address';
    case 'private':
    case 'uniqueLocal':
      return 'a private address';
    case 'carrierGradeNat':
      return 'a shared (carrier-grade NAT) address';
    case 'linkLocal':
      return 'a link-local address (cloud metadata)';
    case 'multicast':
      return 'a multicast address';
    case 'unspecified':
      return 'an unspecified address';
    case 'broadcast':
      return 'the broadcast address';
    default:
      return `a reserved address (${range})`;
  }
}

/** The address ranges the proxy's resolved-address guard refuses beyond its own (it leaves private ranges to the caller). */
export const DENIED_RESOLVED_RANGES = [
  '10.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '100.64.0.0/10',
  '192.0.0.0/24',
  '192.0.2.0/24',
  '198.18.0.0/15',
  '198.51.100.0/24',
  '203.0.113.0/24',
  '240.0.0.0/4',
  'fc00::/7',
  'fec0::/10',
  '2001:db8::/32',
  '100::/64',
];

function matches(pattern: string, host: string): boolean {
  if (pattern.startsWith('*.')) return host.endsWith(pattern.slice(1));
  return pattern === host;
}

/**
 * Whether the agent may open a connection to `host:port` (as a client spelled it). A name passes here when the
 * policy allows it; the address it resolves to is judged again when the proxy connects (pinned, see proxy.ts).
 */
export function judge(
  policy: NetworkPolicy,
  rawHost: string,
  port: number,
  exceptions: readonly ServerException[] = [],
): Verdict {
  const host = canonicalizeHost(rawHost.replace(/^\[|\]$/g, ''));
  if (!host) return { allowed: false, reason: 'not a valid host' };
  if (exceptions.some((e) => e.host === host && e.port === port))
    return { allowed: true, reason: "the server's own address (an exception of the egress policy)" };
  if (policy.mode === 'none') return { allowed: false, reason: 'the runner allows no network (network: none)' };
  const literal = ipaddr.isValid(host);
  if (literal) {
    const why = nonPublicAddress(host);
    if (why) return { allowed: false, reason: `${host} is ${why}` };
  } else if (host === 'localhost' || host.endsWith('.localhost')) {
    return { allowed: false, reason: `${host} is a loopback name` };
  }
  if (policy.mode === 'allow' && !policy.hosts.some((p) => matches(p, host)))
    return { allowed: false, reason: `${host} is not in the runner's network.allow` };
  return { allowed: true };
}
