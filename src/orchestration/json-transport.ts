/**
 * One POST of MCP streamable HTTP answered with JSON, stateless (no session, no stream): the part of the SDK's
 * `StreamableHTTPServerTransport` this endpoint uses (`sessionIdGenerator: undefined`, `enableJsonResponse`),
 * with its checks and answers, without converting the Node request to a Web `Request` and back, which cost more
 * than the rest of a call besides its SQL. Messages the server sends outside a response (notifications, requests
 * to the client) have no stream to travel on and are dropped, as the SDK's JSON mode drops them.
 */
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  isInitializeRequest,
  isJSONRPCRequest,
  JSONRPCMessageSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';

/** Messages one batch may hold (the SDK's limit). */
const MAX_BATCH = 100;

export interface JsonAnswer {
  status: number;
  /** The JSON body; none for 202. */
  body?: unknown;
}

const failure = (status: number, code: number, message: string): JsonAnswer => ({
  status,
  body: { jsonrpc: '2.0', error: { code, message }, id: null },
});

export class JsonRequestTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport['onmessage'];
  #answers = new Map<RequestId, JSONRPCMessage | undefined>();
  #done: ((answer: JsonAnswer | undefined) => void) | undefined;
  #closed = false;
  readonly #authInfo: AuthInfo | undefined;

  /** `authInfo`: handed to the server with each message (the request's caller). */
  constructor(authInfo?: AuthInfo) {
    this.#authInfo = authInfo;
  }

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage): Promise<void> {
    if (!('id' in message) || !('result' in message || 'error' in message)) return;
    const id = message.id;
    if (id === undefined || !this.#answers.has(id) || this.#answers.get(id)) return;
    this.#answers.set(id, message);
    const all = [...this.#answers.values()];
    if (all.some((m) => m === undefined)) return;
    this.#finish({ status: 200, body: all.length === 1 ? all[0] : all });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#finish(undefined);
    this.onclose?.();
  }

  #finish(answer: JsonAnswer | undefined): void {
    const done = this.#done;
    this.#done = undefined;
    done?.(answer);
  }

  /**
   * Hands the request's messages to the server (connect it first); answers what to send back, or undefined when
   * the transport was closed before every request was answered (the client went away).
   */
  handle(
    headers: Readonly<Record<string, string | string[] | undefined>>,
    body: unknown,
  ): Promise<JsonAnswer | undefined> {
    const accept = String(headers.accept ?? '');
    if (!accept.includes('application/json') || !accept.includes('text/event-stream'))
      return Promise.resolve(
        failure(406, -32000, 'Not Acceptable: Client must accept both application/json and text/event-stream'),
      );
    if (Array.isArray(body) && body.length > MAX_BATCH)
      return Promise.resolve(failure(400, -32600, `Invalid Request: Batch must not exceed ${MAX_BATCH} messages`));
    let messages: JSONRPCMessage[];
    try {
      messages = (Array.isArray(body) ? body : [body]).map((m) => JSONRPCMessageSchema.parse(m));
    } catch {
      return Promise.resolve(failure(400, -32700, 'Parse error: Invalid JSON-RPC message'));
    }
    const initializing = messages.some(isInitializeRequest);
    if (initializing && messages.length > 1)
      return Promise.resolve(failure(400, -32600, 'Invalid Request: Only one initialization request is allowed'));
    const version = headers['mcp-protocol-version'];
    if (!initializing && typeof version === 'string' && !SUPPORTED_PROTOCOL_VERSIONS.includes(version))
      return Promise.resolve(
        failure(
          400,
          -32000,
          `Bad Request: Unsupported protocol version: ${version} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
        ),
      );
    const info = { requestInfo: { headers: { ...headers } }, ...(this.#authInfo ? { authInfo: this.#authInfo } : {}) };
    const requests = messages.filter(isJSONRPCRequest);
    if (requests.length === 0) {
      for (const message of messages) this.onmessage?.(message, info);
      return Promise.resolve({ status: 202 });
    }
    return new Promise((resolve) => {
      this.#done = resolve;
      for (const request of requests) this.#answers.set(request.id, undefined);
      for (const message of messages) this.onmessage?.(message, info);
    });
  }
}
