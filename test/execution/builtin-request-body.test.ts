/**
 * The built-in agent's request body, built from the messages encoded once: byte for byte the JSON of the
 * request as the `openai` client would have serialized it, as the conversation grows and when it is replaced.
 */
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { describe, expect, it } from 'vitest';
import { RequestBody } from '../../src/execution/builtin-agent/request-body.ts';

const tools = [{ type: 'function' as const, function: { name: 'shell', description: 'Run "sh"', parameters: {} } }];

function expected(messages: ChatCompletionMessageParam[], withTools = true): string {
  return JSON.stringify({
    model: 'm"ö',
    messages,
    stream: true,
    stream_options: { include_usage: true },
    ...(withTools ? { tools } : {}),
  });
}

describe('the request body', () => {
  it('is the JSON of the whole request as the conversation grows past its buffer', () => {
    const body = new RequestBody('m"ö', tools);
    const messages: ChatCompletionMessageParam[] = [{ role: 'system', content: 'sys' }];
    expect(Buffer.from(body.build(messages)).toString()).toBe(expected(messages));
    for (let i = 0; i < 60; i++) {
      messages.push({ role: 'user', content: `ü ${'x'.repeat(2_000)} ${i} "\n` });
      const json = Buffer.from(body.build(messages)).toString();
      expect(json).toBe(expected(messages));
    }
    expect(JSON.parse(Buffer.from(body.build(messages)).toString()).messages).toHaveLength(61);
  });

  it('starts over for a conversation that does not continue the last one, and without tools', () => {
    const body = new RequestBody('m"ö', []);
    const first: ChatCompletionMessageParam[] = [
      { role: 'user', content: 'one' },
      { role: 'user', content: 'two' },
    ];
    expect(Buffer.from(body.build(first)).toString()).toBe(expected(first, false));
    const other: ChatCompletionMessageParam[] = [{ role: 'user', content: 'three' }];
    expect(Buffer.from(body.build(other)).toString()).toBe(expected(other, false));
    expect(Buffer.from(body.build([])).toString()).toBe(expected([], false));
  });
});
