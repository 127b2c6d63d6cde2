/**
 * The chat-completions request body, kept as one growing buffer: the conversation only grows, so each turn
 * serializes and encodes only the messages it added, appends them after the ones already there, and writes the
 * request's tail behind them. Serializing the whole conversation every turn (and undici encoding that string
 * again) was most of the built-in agent's time per turn; a fresh buffer per turn put it in the garbage collector
 * instead (docs/performance.md). The `openai` client sends a byte body as is.
 */
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';

export class RequestBody {
  readonly #head: Buffer;
  readonly #tail: Buffer;
  #buffer: Buffer;
  /** Bytes of the head and the messages encoded so far. */
  #end = 0;
  /** The messages in the buffer, in order: a conversation that is not their continuation is encoded anew. */
  #encoded: ChatCompletionMessageParam[] = [];

  constructor(model: string, tools: readonly ChatCompletionTool[]) {
    this.#head = Buffer.from(`{"model":${JSON.stringify(model)},"messages":[`);
    this.#tail = Buffer.from(
      `],"stream":true,"stream_options":{"include_usage":true}${tools.length ? `,"tools":${JSON.stringify(tools)}` : ''}}`,
    );
    this.#buffer = Buffer.allocUnsafe(64 * 1024);
    this.#reset();
  }

  #reset(): void {
    this.#encoded = [];
    this.#end = this.#head.copy(this.#buffer, 0);
  }

  #append(bytes: Buffer): void {
    const need = this.#end + bytes.length + this.#tail.length;
    if (need > this.#buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, this.#buffer.length * 2));
      this.#buffer.copy(grown, 0, 0, this.#end);
      this.#buffer = grown;
    }
    this.#end += bytes.copy(this.#buffer, this.#end);
  }

  /**
   * The body for a request with these messages: `{model, messages, stream, stream_options, tools?}`. It is a
   * view of the buffer, valid until the next call (the client has sent it by the time the reply is read).
   */
  build(messages: readonly ChatCompletionMessageParam[]): Uint8Array {
    const known = this.#encoded;
    if (known.length > messages.length || known.some((m, i) => messages[i] !== m)) this.#reset();
    for (let i = this.#encoded.length; i < messages.length; i++) {
      const message = messages[i]!;
      this.#append(Buffer.from(`${i === 0 ? '' : ','}${JSON.stringify(message)}`));
      this.#encoded.push(message);
    }
    const size = this.#end + this.#tail.copy(this.#buffer, this.#end);
    return this.#buffer.subarray(0, size);
  }
}
