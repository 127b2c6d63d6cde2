import { TextDecoder } from 'node:util';

// Fatal: a body that is not UTF-8 is not JSON (RFC 8259 §8.1). A leading byte-order mark is skipped, as
// the RFC allows parsers to.
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The JSON value of a delivery body (any value: object, array or scalar), or undefined when it is not JSON. */
export function parseJsonBody(body: Uint8Array): { value: unknown } | undefined {
  if (body.length === 0) return undefined;
  try {
    return { value: JSON.parse(utf8.decode(body)) as unknown };
  } catch {
    return undefined;
  }
}
