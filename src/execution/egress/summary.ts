/** The egress report of an execution, in one status event: what went out, what was refused. */
import type { EgressRecord } from './proxy.ts';

interface HostTally {
  host: string;
  port: number;
  connections: number;
  bytes: number;
}

function tally(records: readonly EgressRecord[]): HostTally[] {
  const byKey = new Map<string, HostTally>();
  for (const r of records) {
    const key = `${r.host}:${r.port}`;
    const t = byKey.get(key) ?? { host: r.host, port: r.port, connections: 0, bytes: 0 };
    t.connections += 1;
    t.bytes += r.bytes_sent + r.bytes_received;
    byKey.set(key, t);
  }
  return [...byKey.values()].sort((a, b) => b.connections - a.connections);
}

const listed = (t: HostTally[]): string =>
  t
    .slice(0, 10)
    .map((x) => `${x.host}:${x.port}${x.connections > 1 ? ` ×${x.connections}` : ''}`)
    .join(', ') + (t.length > 10 ? `, and ${t.length - 10} more` : '');

/** `data` of the status event: a message and the counts (`egress: {allowed, refused, bytes}`). */
export function egressSummary(records: readonly EgressRecord[]): Record<string, unknown> {
  const allowed = tally(records.filter((r) => r.allowed));
  const refused = tally(records.filter((r) => !r.allowed));
  const bytes = allowed.reduce((n, t) => n + t.bytes, 0);
  const parts = [
    allowed.length
      ? `${allowed.reduce((n, t) => n + t.connections, 0)} allowed (${listed(allowed)}; ${bytes} bytes)`
      : 'none allowed',
    refused.length ? `${refused.reduce((n, t) => n + t.connections, 0)} refused (${listed(refused)})` : 'none refused',
  ];
  return {
    message: `Egress: ${parts.join('; ')}`,
    egress: {
      allowed: allowed.reduce((n, t) => n + t.connections, 0),
      refused: refused.reduce((n, t) => n + t.connections, 0),
      bytes,
      refused_hosts: refused.slice(0, 50).map((t) => `${t.host}:${t.port}`),
    },
  };
}
