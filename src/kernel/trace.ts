import { randomUUID } from 'node:crypto';

/**
 * The request id doubles as the problem documents' `trace_id`: the trace id of an incoming W3C `traceparent`
 * header when there is one (so a caller can find its request in our logs), otherwise 16 random bytes.
 */
export function traceIdOf(req: { headers: Record<string, string | string[] | undefined> }): string {
  const header = req.headers.traceparent;
  const match =
    typeof header === 'string' ? /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(header.trim()) : null;
  if (match && !/^0+$/.test(match[1]!)) return match[1]!;
  // randomUUID draws from a cached entropy pool: cheaper per request than randomBytes.
  return randomUUID().replaceAll('-', '');
}
