import { LogController } from 'fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '../kernel/log.ts';
import { redactedPath } from '../kernel/redact.ts';

/** The access log line of a request: method, path (no query string, a URL token redacted), status, time. */
export function requestLine(method: string, url: string, status: number, ms: number): string {
  return `${method} ${redactedPath(url)} ${status} ${ms} ms`;
}

/**
 * One log line per request, when it is answered: `GET /api/v1/agent/runs 200 12 ms`. Fastify's own entries
 * ("incoming request", then "request completed", each several lines in the readable format) are replaced;
 * the fields repeat the line for JSON logs, with the trace id as `req.id`. Written through the root logger,
 * not the request's child, so that the readable format has nothing to print below the line (src/log.ts).
 */
export class RequestLog extends LogController {
  readonly #log: Logger;

  constructor(log: Logger) {
    super();
    this.#log = log;
  }

  override incomingRequest(): void {}

  override routeNotFound(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const ms = Math.round(reply.elapsedTime);
    const fields = { req: request, res: reply, responseTime: ms };
    const line = requestLine(request.method, request.url, reply.statusCode, ms);
    if (error) this.#log.error({ ...fields, err: error }, line);
    else this.#log.info(fields, line);
  }
}
