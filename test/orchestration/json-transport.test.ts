/**
 * The factory interface's JSON transport tells plain requests from the rest without the SDK's schema: whatever
 * it takes as a request must be one `JSONRPCMessageSchema` accepts as a request, unchanged by the parse; anything
 * it does not take goes to the schema as before.
 */
import { describe, expect, it } from 'vitest';
import { JSONRPCMessageSchema, JSONRPCRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { isPlainRequest } from '../../src/orchestration/json-transport.ts';

const CORPUS: unknown[] = [
  { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'dispatch_agent', arguments: { agent: 'a' } } },
  { jsonrpc: '2.0', id: 'abc', method: 'tools/list' },
  { jsonrpc: '2.0', id: 0, method: 'ping', params: {} },
  { jsonrpc: '2.0', id: -7, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {} } },
  // not plain: left to the schema (accepted or not)
  { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', _meta: { progressToken: 1 } } },
  { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { _meta: 'not an object' } },
  { jsonrpc: '2.0', method: 'notifications/initialized' },
  { jsonrpc: '2.0', id: 1, result: {} },
  { jsonrpc: '2.0', id: 1, error: { code: -32600, message: 'x' } },
  { jsonrpc: '1.0', id: 1, method: 'ping' },
  { jsonrpc: '2.0', id: 1.5, method: 'ping' },
  { jsonrpc: '2.0', id: 2 ** 60, method: 'ping' },
  { jsonrpc: '2.0', id: null, method: 'ping' },
  { jsonrpc: '2.0', id: true, method: 'ping' },
  { jsonrpc: '2.0', id: 1, method: 7 },
  { jsonrpc: '2.0', id: 1, method: 'ping', params: null },
  { jsonrpc: '2.0', id: 1, method: 'ping', params: [1, 2] },
  { jsonrpc: '2.0', id: 1, method: 'ping', params: 'x' },
  { jsonrpc: '2.0', id: 1, method: 'ping', extra: true },
  { jsonrpc: '2.0', id: 1, method: 'ping', params: undefined },
  JSON.parse('{"jsonrpc":"2.0","id":1,"method":"ping","__proto__":{"x":1}}'),
  [{ jsonrpc: '2.0', id: 1, method: 'ping' }],
  null,
  'ping',
  42,
  {},
];

describe('the JSON transport: plain requests', () => {
  it('takes as a request only what the SDK schema accepts as one, unchanged', () => {
    let plain = 0;
    for (const message of CORPUS) {
      if (!isPlainRequest(message)) continue;
      plain++;
      const parsed = JSONRPCRequestSchema.safeParse(message);
      expect(parsed.success, JSON.stringify(message)).toBe(true);
      expect(parsed.data).toEqual(message);
      expect(JSONRPCMessageSchema.parse(message)).toEqual(message);
    }
    expect(plain).toBe(4);
  });

  it('leaves every other message to the schema', () => {
    const left = CORPUS.filter((m) => !isPlainRequest(m));
    expect(left).toHaveLength(CORPUS.length - 4);
    // the schema still refuses the malformed ones and accepts notifications, responses and `_meta` requests
    const accepted = left.filter((m) => JSONRPCMessageSchema.safeParse(m).success);
    expect(accepted).toEqual([CORPUS[4], CORPUS[6], CORPUS[7], CORPUS[8], CORPUS[19]]);
  });
});
