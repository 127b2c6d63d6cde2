/**
 * MCP streamable HTTP answered with JSON, stateless (no session, no stream): the part of the SDK's
 * `StreamableHTTPServerTransport` this endpoint uses (`sessionIdGenerator: undefined`, `enableJsonResponse`),
 * with its checks and answers, without converting the Node request to a Web `Request` and back, which cost more
 * than the rest of a call besides its SQL.
 *
 * One transport stays connected to one server for the life of the process and carries every POST as an exchange
 * of its own: each request gets an id of the transport's (clients number theirs alike) and its answer goes back
 * to its POST under the client's id. Connecting and closing a server per POST cost as much as the rest of the
 * SDK's work on a call. Messages the server sends outside a response (notifications, requests to the client) have
 * no stream to travel on and are dropped, as the SDK's JSON mode drops them.
 */
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  isInitializeRequest,
  isJSONRPCNotification,
  isJSONRPCRequest,
  JSONRPCMessageSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';
import type { JSONRPCMessage, JSONRPCRequest, RequestId } from '@modelcontextprotocol/sdk/types.js';

/** Messages one batch may hold (the SDK's limit). */
const MAX_BATCH = 100;

export interface JsonAnswer {
  status: number;
  /** The JSON body; none for 202. */
  body?: unknown;
}

/** One POST's messages under way. */
export interface JsonExchange {
  /** What to send back; undefined when the exchange was cancelled before every request was answered. */
  readonly answer: Promise<JsonAnswer | undefined>;
  /** The client went away: its requests still under way are cancelled (their signals abort), none is answered. */
  cancel(): void;
}

const failure = (status: number, code: number, message: string): JsonAnswer => ({
  status,
  body: { jsonrpc: '2.0', error: { code, message }, id: null },
});

const settled = (answer: JsonAnswer): JsonExchange => ({ answer: Promise.resolve(answer), cancel: () => {} });

/** A request of an exchange: the client's id, and its answer once sent. */
interface Slot {
  id: RequestId;
  answer?: JSONRPCMessage;
  /** Cancelled by its own client in the same POST: answered with nothing. */
  dropped?: boolean;
}

class Exchange implements JsonExchange {
  readonly answer: Promise<JsonAnswer | undefined>;
  readonly slots = new Map<number, Slot>();
  #resolve!: (answer: JsonAnswer | undefined) => void;
  #done = false;
  readonly #cancel: (exchange: Exchange) => void;

  constructor(cancel: (exchange: Exchange) => void) {
    this.#cancel = cancel;
    this.answer = new Promise((resolve) => {
      this.#resolve = resolve;
    });
  }

  answered(): void {
    if (this.#done) return;
    const all: JSONRPCMessage[] = [];
    for (const slot of this.slots.values()) {
      if (slot.dropped) continue;
      if (!slot.answer) return;
      all.push(slot.answer);
    }
    this.#finish(all.length === 0 ? { status: 202 } : { status: 200, body: all.length === 1 ? all[0] : all });
  }

  cancel(): void {
    if (this.#done) return;
    this.#cancel(this);
    this.#finish(undefined);
  }

  #finish(answer: JsonAnswer | undefined): void {
    this.#done = true;
    this.#resolve(answer);
  }
}

export class JsonRequestTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport['onmessage'];
  /** Requests under way, by the transport's id. */
  readonly #pending = new Map<number, Exchange>();
  /** From 1: the SDK ignores a cancellation of request id 0. */
  #next = 1;

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage): Promise<void> {
    if (!('id' in message) || typeof message.id !== 'number' || !('result' in message || 'error' in message)) return;
    const exchange = this.#pending.get(message.id);
    const slot = exchange?.slots.get(message.id);
    if (!exchange || !slot) return;
    this.#pending.delete(message.id);
    slot.answer = { ...message, id: slot.id };
    exchange.answered();
  }

  async close(): Promise<void> {
    for (const exchange of new Set(this.#pending.values())) exchange.cancel();
    this.onclose?.();
  }

  /**
   * Hands a POST's messages to the server (connected to this transport); `authInfo` goes with each of them (the
   * request's caller).
   */
  exchange(
    headers: Readonly<Record<string, string | string[] | undefined>>,
    body: unknown,
    authInfo?: AuthInfo,
  ): JsonExchange {
    const accept = String(headers.accept ?? '');
    if (!accept.includes('application/json') || !accept.includes('text/event-stream'))
      return settled(
        failure(406, -32000, 'Not Acceptable: Client must accept both application/json and text/event-stream'),
      );
    if (Array.isArray(body) && body.length > MAX_BATCH)
      return settled(failure(400, -32600, `Invalid Request: Batch must not exceed ${MAX_BATCH} messages`));
    let messages: JSONRPCMessage[];
    try {
      messages = (Array.isArray(body) ? body : [body]).map((m) => JSONRPCMessageSchema.parse(m));
    } catch {
      return settled(failure(400, -32700, 'Parse error: Invalid JSON-RPC message'));
    }
    const initializing = messages.some(isInitializeRequest);
    if (initializing && messages.length > 1)
      return settled(failure(400, -32600, 'Invalid Request: Only one initialization request is allowed'));
    const version = headers['mcp-protocol-version'];
    if (!initializing && typeof version === 'string' && !SUPPORTED_PROTOCOL_VERSIONS.includes(version))
      return settled(
        failure(
          400,
          -32000,
          `Bad Request: Unsupported protocol version: ${version} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
        ),
      );
    const info = { requestInfo: { headers: { ...headers } }, ...(authInfo ? { authInfo } : {}) };
    const exchange = new Exchange((e) => this.#cancelled(e));
    const ours = new Map<RequestId, number>();
    const delivered: JSONRPCMessage[] = [];
    for (const message of messages) {
      if (isJSONRPCRequest(message)) {
        const id = this.#next++;
        exchange.slots.set(id, { id: message.id });
        ours.set(message.id, id);
        delivered.push({ ...message, id } satisfies JSONRPCRequest);
      } else if (isJSONRPCNotification(message) && message.method === 'notifications/cancelled') {
        // a client cancels only a request of its own POST (another POST's ids are not its to name)
        const requestId = (message.params as { requestId?: RequestId } | undefined)?.requestId;
        const id = requestId === undefined ? undefined : ours.get(requestId);
        if (id === undefined) continue;
        exchange.slots.get(id)!.dropped = true;
        delivered.push({ ...message, params: { ...message.params, requestId: id } });
      } else if (isJSONRPCNotification(message) && message.method !== 'notifications/progress') {
        // progress and responses concern requests of the server's own, which it never sends
        delivered.push(message);
      }
    }
    for (const [id, slot] of exchange.slots) if (!slot.dropped) this.#pending.set(id, exchange);
    for (const message of delivered) this.onmessage?.(message, info);
    if (exchange.slots.size === 0) return settled({ status: 202 });
    exchange.answered();
    return exchange;
  }

  #cancelled(exchange: Exchange): void {
    for (const [id, slot] of exchange.slots) {
      if (this.#pending.get(id) !== exchange) continue;
      this.#pending.delete(id);
      if (slot.dropped || slot.answer) continue;
      this.onmessage?.({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: id, reason: 'the client closed the request' },
      });
    }
  }
}
