/**
 * Answers for requests that never reach a route: Node's HTTP parser refused them (malformed request line or
 * header, headers too large) or they did not arrive within the request timeout. Written straight to the socket
 * as problem documents (docs/errors.md), then the connection is closed.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { AppError } from '../kernel/errors.ts';
import { problemFor, problemHeaders } from '../kernel/problem.ts';

function appErrorOf(err: NodeJS.ErrnoException): AppError {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new AppError('request_timeout', 'the request headers and body were not received in time');
    case 'HPE_HEADER_OVERFLOW':
      return new AppError('invalid_request', 'the request headers are too large');
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
    case 'HPE_INVALID_CONTENT_LENGTH':
      return new AppError('invalid_request', 'the Content-Length header is invalid');
    default:
      return new AppError('invalid_request', 'the request is not valid HTTP/1.1');
  }
}

export function answerClientError(err: NodeJS.ErrnoException, socket: Socket, log: FastifyBaseLogger): void {
  // A reset connection has nobody to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const appError = appErrorOf(err);
  log.debug({ code: err.code }, 'client error');
  if (socket.writable) {
    const body = JSON.stringify(problemFor(appError, undefined, undefined));
    const headers = { ...problemHeaders(appError), 'content-type': 'application/problem+json; charset=utf-8' };
    const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
    socket.write(
      `HTTP/1.1 ${appError.status} ${STATUS_CODES[appError.status] ?? ''}\r\n${lines.join('')}` +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
