/** The host entries of a runner's `network.allow` (the egress policy; docs/governance.md, "Egress"). */
import ipaddr from 'ipaddr.js';

/** A name (`github.com`) or a subdomain wildcard (`*.npmjs.org`); IP addresses are checked apart. */
const HOST_PATTERN = /^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

/** Why a `network.allow` entry is not usable, or undefined when it is. */
export function allowEntryProblem(entry: string): string | undefined {
  const e = entry.trim().toLowerCase();
  if (!e) return 'an empty host';
  if (ipaddr.isValid(e)) return undefined;
  if (!HOST_PATTERN.test(e) || e.length > 253) return `"${entry}" is not a host name, "*.<domain>" or an IP address`;
  return undefined;
}
