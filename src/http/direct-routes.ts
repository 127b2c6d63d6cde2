/**
 * Routes served straight from `node:http`, ahead of Fastify's router: the webhook ingress, whose cost per
 * request is a target of its own (docs/decisions.md, "The ingress answers from node:http"). Fastify's request
 * and reply objects, its hook chain, the per-request child logger and the content-type parser cost about a fifth
 * of a bare `node:http` server's whole request; a sender's POST needs none of them. Everything else reaches
 * Fastify unchanged.
 */
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { DirectHandler } from '../plugin.ts';

/** The server options of Fastify's that apply to a server made by `serverFactory`. */
export interface DirectServerOptions {
  keepAliveTimeout?: number;
  requestTimeout?: number;
  connectionTimeout?: number;
  maxRequestsPerSocket?: number;
}

/** How often Node looks for requests past their timeout: a fraction of the timeout, between 100 ms and 30 s. */
function checkingInterval(requestTimeout: number): number {
  return Math.min(30_000, Math.max(100, Math.floor(requestTimeout / 4)));
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
    const timeouts = options.requestTimeout
      ? {
          requestTimeout: options.requestTimeout,
          headersTimeout: Math.min(60_000, options.requestTimeout),
          connectionsCheckingInterval: checkingInterval(options.requestTimeout),
        }
      : {};
    const server = createServer(timeouts, (request, response) => {
      const direct = this.handlerFor(request.url);
      if (direct) direct(request, response);
      else fastifyHandler(request, response);
    });
    if (options.keepAliveTimeout !== undefined) server.keepAliveTimeout = options.keepAliveTimeout;
    if (options.connectionTimeout !== undefined) server.setTimeout(options.connectionTimeout);
    if (options.maxRequestsPerSocket) server.maxRequestsPerSocket = options.maxRequestsPerSocket;
    return server;
  }
}
