import ipaddr from 'ipaddr.js';

/**
 * A client address as per-client budgets count it: IPv4 (IPv4-mapped IPv6 unwrapped) as it is, IPv6 by its /64,
 * which one host usually holds whole (counting single IPv6 addresses would let a client rotate through them).
 */
export function clientKey(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4);
  return `${parts.map((p) => p.toString(16)).join(':')}::/64`;
}
