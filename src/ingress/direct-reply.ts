/** How the ingress answers from node:http (src/http/direct-routes.ts): problem documents, bodies, the access log. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AppError } from '../kernel/errors.ts';
import type { Logger } from '../kernel/log.ts';
import { problemFor, problemHeaders } from '../kernel/problem.ts';
import { redactedPath } from '../kernel/redact.ts';

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
 * The access log line the app writes for its own routes (`POST /webhooks/w/… 202 3 ms`, the URL redacted),
 * written when the response finishes; nothing is done below the info level.
 */
export function logDirectRequest(
  log: Logger,
  request: IncomingMessage,
  response: ServerResponse,
  trace: () => string,
): void {
  if (!INFO_AND_BELOW.has(log.level)) return;
  const started = performance.now();
  const traceId = trace();
  response.once('finish', () => {
    const ms = Math.round(performance.now() - started);
    log.info(
      { req: { method: request.method, url: request.url, id: traceId }, res: response, responseTime: ms },
      `${request.method ?? 'GET'} ${redactedPath(request.url ?? '/')} ${response.statusCode} ${ms} ms`,
    );
  });
}
