/**
 * Routes served straight from `node:http`, ahead of Fastify's router: the webhook ingress, whose cost per
 * request is a target of its own (docs/decisions.md, "The ingress answers from node:http"). Fastify's request
 * and reply objects, its hook chain, the per-request child logger and the content-type parser cost about a fifth
 * of a bare `node:http` server's whole request; a sender's POST needs none of them. Everything else reaches
 * Fastify unchanged.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { AppError } from './errors.ts';
import { problemFor, problemHeaders } from './errors.ts';
import { redactedPath } from './redact.ts';

export type DirectHandler = (request: IncomingMessage, response: ServerResponse) => void;

/** A route pattern answered by a direct handler, as `registeredRoutes` lists it. */
export interface DirectRoute {
  methods: readonly string[];
  /** Fastify-style pattern (`/webhooks/w/:uid`), for the route table only: the handler does its own matching. */
  url: string;
}

/** The server options of Fastify's that apply to a server made by `serverFactory`. */
export interface DirectServerOptions {
  keepAliveTimeout?: number;
  requestTimeout?: number;
  connectionTimeout?: number;
  maxRequestsPerSocket?: number;
}

/** The direct handlers of one app, each owning every request whose path starts with its prefix. */
export class DirectRoutes {
  readonly #handlers: { prefix: string; handler: DirectHandler }[] = [];

  /** `prefix` ends with `/`: `/webhooks/w/` takes `/webhooks/w/…` and nothing else. */
  add(prefix: string, handler: DirectHandler): void {
    if (!prefix.endsWith('/')) throw new Error(`a direct route prefix ends with "/": ${prefix}`);
    this.#handlers.push({ prefix, handler });
  }

  handlerFor(url: string | undefined): DirectHandler | undefined {
    if (url === undefined) return undefined;
    for (const { prefix, handler } of this.#handlers) if (url.startsWith(prefix)) return handler;
    return undefined;
  }

  /** Fastify's `serverFactory`: the server it would make, offering each request to the direct handlers first. */
  server(fastifyHandler: DirectHandler, options: DirectServerOptions): Server {
    const server = createServer((request, response) => {
      const direct = this.handlerFor(request.url);
      if (direct) direct(request, response);
      else fastifyHandler(request, response);
    });
    if (options.keepAliveTimeout !== undefined) server.keepAliveTimeout = options.keepAliveTimeout;
    if (options.requestTimeout !== undefined) server.requestTimeout = options.requestTimeout;
    if (options.connectionTimeout !== undefined) server.setTimeout(options.connectionTimeout);
    if (options.maxRequestsPerSocket) server.maxRequestsPerSocket = options.maxRequestsPerSocket;
    return server;
  }
}

/**
 * Answers a problem document (docs/errors.md) as `sendProblem` does on Fastify's routes: the error's headers,
 * `x-should-retry: false` where retrying cannot help, `instance` with a URL token redacted, `trace_id`.
 */
export function sendDirectProblem(
  request: IncomingMessage,
  response: ServerResponse,
  err: AppError,
  traceId: string,
  extraHeaders: Record<string, string> = {},
): void {
  const body = JSON.stringify(problemFor(err, redactedPath(request.url ?? '/'), traceId));
  sendDirect(
    response,
    err.status,
    { ...problemHeaders(err), ...extraHeaders, 'content-type': 'application/problem+json; charset=utf-8' },
    body,
  );
}

/** Answers `body` with its length (no chunked encoding), unless the sender is gone or was answered already. */
export function sendDirect(
  response: ServerResponse,
  status: number,
  headers: Record<string, string>,
  body: string,
): void {
  if (response.headersSent || response.destroyed) return;
  response.writeHead(status, { ...headers, 'content-length': Buffer.byteLength(body) }).end(body);
}

const INFO_AND_BELOW = new Set(['trace', 'debug', 'info']);

/**
 * The access log line Fastify writes for its own routes ("request completed", with the URL redacted by the
 * logger's `req` serializer), written when the response finishes; nothing is done below the info level.
 */
export function logDirectRequest(
  log: FastifyBaseLogger,
  request: IncomingMessage,
  response: ServerResponse,
  trace: () => string,
): void {
  if (!INFO_AND_BELOW.has(log.level)) return;
  const started = performance.now();
  const traceId = trace();
  response.once('finish', () => {
    log.info(
      {
        reqId: traceId,
        req: { method: request.method, url: request.url, id: traceId },
        res: response,
        responseTime: performance.now() - started,
      },
      'request completed',
    );
  });
}
