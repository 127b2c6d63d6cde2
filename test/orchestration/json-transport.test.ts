/**
 * The transport that carries every POST of the factory interface to one SDK server connected for good
 * (src/orchestration/json-transport.ts), with the SDK's real `McpServer`: POSTs under way at once with the same
 * JSON-RPC ids each get their own answer, with their own caller; a POST's cancellation aborts its own requests
 * only, never another POST's that shares an id; a request cancelled in its own batch answers nothing and the POST
 * does not hang.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { JsonRequestTransport } from '../../src/orchestration/json-transport.ts';

const HEADERS = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };

/** A server whose `hold` tool answers its caller and argument once `release(tag)` is called. */
async function holdingServer() {
  const held = new Map<string, { release: () => void; signal: AbortSignal }>();
  const started = new Map<string, () => void>();
  const mcp = new McpServer({ name: 'test', version: '1' }, { capabilities: { tools: {} } });
  mcp.registerTool('hold', { inputSchema: { tag: z.string() } }, async ({ tag }, extra) => {
    await new Promise<void>((resolve) => {
      held.set(tag, { release: resolve, signal: extra.signal });
      started.get(tag)?.();
    });
    const caller = String(extra.authInfo?.extra?.caller);
    return { content: [{ type: 'text', text: `${caller}:${tag}` }] };
  });
  const transport = new JsonRequestTransport();
  await mcp.connect(transport);
  const whenHeld = (tag: string) =>
    held.has(tag) ? Promise.resolve() : new Promise<void>((resolve) => started.set(tag, resolve));
  return { transport, held, whenHeld };
}

const call = (id: number | string, tag: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'hold', arguments: { tag } },
});
const as = (caller: string) => ({ token: '', clientId: caller, scopes: [], extra: { caller } });
const body = (answer: { body?: unknown } | undefined) =>
  answer!.body as { id: unknown; result: { content: { text: string }[] } };
const text = (answer: { body?: unknown } | undefined) => body(answer).result.content[0]!.text;

describe('one transport carries many POSTs', () => {
  it('answers each POST under its own ids, for its own caller, whatever order they finish in', async () => {
    const { transport, held, whenHeld } = await holdingServer();
    const a = transport.exchange(HEADERS, call(1, 'a'), as('alice'));
    const b = transport.exchange(HEADERS, call(1, 'b'), as('bob'));
    const c = transport.exchange(HEADERS, [call('x', 'c1'), call('y', 'c2')], as('carol'));
    await Promise.all(['a', 'b', 'c1', 'c2'].map(whenHeld));
    held.get('b')!.release();
    const answerB = await b.answer;
    expect(answerB?.status).toBe(200);
    expect(body(answerB).id).toBe(1);
    expect(text(answerB)).toBe('bob:b');
    held.get('c2')!.release();
    held.get('a')!.release();
    const answerA = await a.answer;
    expect(body(answerA).id).toBe(1);
    expect(text(answerA)).toBe('alice:a');
    held.get('c1')!.release();
    const answerC = await c.answer;
    const batch = answerC!.body as { id: unknown; result: { content: { text: string }[] } }[];
    expect(batch.map((m) => [m.id, m.result.content[0]!.text])).toEqual([
      ['x', 'carol:c1'],
      ['y', 'carol:c2'],
    ]);
  });

  it("cancels a POST's own requests when its client goes, and no other POST's", async () => {
    const { transport, held, whenHeld } = await holdingServer();
    const kept = transport.exchange(HEADERS, call(7, 'kept'), as('alice'));
    const gone = transport.exchange(HEADERS, call(7, 'gone'), as('bob'));
    await Promise.all([whenHeld('kept'), whenHeld('gone')]);
    // another POST naming id 7 cancels nothing of the others'
    const foreign = transport.exchange(
      HEADERS,
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7 } },
      as('mallory'),
    );
    expect(await foreign.answer).toEqual({ status: 202 });
    gone.cancel();
    expect(await gone.answer).toBeUndefined();
    await expect.poll(() => held.get('gone')!.signal.aborted).toBe(true);
    expect(held.get('kept')!.signal.aborted).toBe(false);
    held.get('gone')!.release();
    held.get('kept')!.release();
    expect(text(await kept.answer)).toBe('alice:kept');
    // the transport serves the next POST as before
    const next = transport.exchange(HEADERS, call(7, 'next'), as('alice'));
    await whenHeld('next');
    held.get('next')!.release();
    expect(text(await next.answer)).toBe('alice:next');
  });

  it('answers a batch whose request its own client cancelled, without that answer', async () => {
    const { transport, held, whenHeld } = await holdingServer();
    const batch = transport.exchange(
      HEADERS,
      [call(1, 'dropped'), { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } }],
      as('alice'),
    );
    expect(await batch.answer).toEqual({ status: 202 });
    await whenHeld('dropped');
    await expect.poll(() => held.get('dropped')!.signal.aborted).toBe(true);
  });

  it('refuses what the SDK transport refuses, before the server sees it', async () => {
    const { transport } = await holdingServer();
    expect(await transport.exchange({ accept: 'application/json' }, call(1, 'a')).answer).toMatchObject({
      status: 406,
    });
    expect(await transport.exchange(HEADERS, { jsonrpc: '1.0', id: 1 }).answer).toMatchObject({ status: 400 });
    expect(
      await transport.exchange({ ...HEADERS, 'mcp-protocol-version': '1999-01-01' }, call(1, 'a')).answer,
    ).toMatchObject({ status: 400 });
  });
});
