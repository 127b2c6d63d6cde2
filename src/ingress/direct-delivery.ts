/**
 * What every delivery endpoint served from node:http shares (webhooks, provider events): the handler's error
 * answers, the POST-only rule, the sender's rate limit and failed-auth budget, the body read within its limit,
 * the JSON check and the 202.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError, isAppError } from '../kernel/errors.ts';
import type { Logger } from '../kernel/log.ts';
import { traceIdOf } from '../kernel/trace.ts';
import { logDirectRequest, sendDirect, sendDirectProblem } from './direct-reply.ts';
import { WEBHOOK_BODY_LIMIT } from './limits.ts';
import type { IngressLimits } from './limits.ts';
import type { DeliveryLabelCode } from './sql.ts';
import type { AcceptOutcome } from './delivery-writer.ts';
import type { IngressLimiters } from './rate-limits.ts';

/** Logs a refused delivery in the delivery log and answers its id. */
export type LogRejected = (label: DeliveryLabelCode, reason: string, size: number) => Promise<string>;

/** As the route table lists a delivery endpoint: POST is served, the other methods answer 405. */
export function deliveryRoutes(urls: readonly string[]): { methods: string[]; url: string }[] {
  return urls.map((url) => ({ methods: ['POST', 'GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'], url }));
}

/**
 * A node:http handler that serves with `serve`: a thrown AppError answers as its problem document, anything else
 * is logged as `failure` and answers 500 with `retry` (the delivery was not recorded).
 */
export function deliveryHandler(
  log: Logger,
  messages: { failure: string; retry: string },
  serve: (request: IncomingMessage, response: ServerResponse) => Promise<void>,
): (request: IncomingMessage, response: ServerResponse) => void {
  return (request, response) => {
    // Made only when something shows it (an error, the info-level access log): a 202 names no trace.
    let traceId: string | undefined;
    const trace = () => (traceId ??= traceIdOf(request));
    logDirectRequest(log, request, response, trace);
    serve(request, response).catch((err: unknown) => {
      if (isAppError(err)) {
        // A refused body may still be arriving: the connection cannot be reused after it.
        const close: Record<string, string> = err.code === 'payload_too_large' ? { connection: 'close' } : {};
        sendDirectProblem(request, response, err, trace(), close);
        return;
      }
      log.error({ err, reqId: trace() }, messages.failure);
      sendDirectProblem(request, response, new AppError('internal_error', messages.retry, { cause: err }), trace());
    });
  };
}

/** 405 for anything but POST. `what`: what the endpoint takes, e.g. "webhooks". */
export function requirePost(request: IncomingMessage, what: string): void {
  if (request.method === 'POST') return;
  throw new AppError('method_not_allowed', `${request.method ?? ''} is not allowed; ${what} take POST`, {
    headers: { allow: 'POST' },
  });
}

/** 429 when the sender (`limitKey`) is over its rate, or out of failed authentications. */
export async function admitSender(
  limiters: IngressLimiters,
  limits: IngressLimits,
  limitKey: string,
  noun: string,
): Promise<void> {
  const wait = await limiters.consumeDelivery(limitKey);
  if (wait !== undefined) {
    const rate = `more than ${limits.senderPoints} ${noun} per ${limits.senderWindowSeconds} s from this sender`;
    throw new AppError('webhook_rate_limited', `${rate}; retry in ${wait} s`, {
      headers: { 'retry-after': String(wait) },
    });
  }
  refuseBlockedSender(limiters, limitKey);
}

/** 429 when the sender (`limitKey`) is out of failed authentications. */
export function refuseBlockedSender(limiters: IngressLimiters, limitKey: string): void {
  const blocked = limiters.failedAuthBlocked(limitKey);
  if (blocked !== undefined) {
    throw new AppError(
      'webhook_auth_rate_limited',
      `too many failed authentications from this sender; retry in ${blocked} s`,
      { headers: { 'retry-after': String(blocked) } },
    );
  }
}

/** The largest size the delivery log records (its `size` column is a 32-bit integer). */
const MAX_LOGGED_SIZE = 2 ** 31 - 1;

/** The body, or the size to log when it is over the limit: a declared length is refused before reading. */
export function readBody(request: IncomingMessage): Promise<Buffer | { tooLarge: number }> {
  const declared = Number(request.headers['content-length']);
  if (declared > WEBHOOK_BODY_LIMIT) return Promise.resolve({ tooLarge: Math.min(declared, MAX_LOGGED_SIZE) });
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onError);
      request.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > WEBHOOK_BODY_LIMIT) {
        stop();
        resolve({ tooLarge: WEBHOOK_BODY_LIMIT + 1 });
      } else {
        chunks.push(chunk);
      }
    };
    const onEnd = () => {
      stop();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      stop();
      reject(err);
    };
    const onClose = () => {
      if (request.complete) return;
      stop();
      reject(new Error('the sender closed the connection before the body ended'));
    };
    request.on('data', onData);
    request.on('end', onEnd);
    request.on('error', onError);
    request.on('close', onClose);
  });
}

/** Logs a body over the limit and answers 413 (`const body = isBuffer(read) ? read : await refuseTooLarge(…)`). */
export async function refuseTooLarge(read: { tooLarge: number }, logRejected: LogRejected): Promise<never> {
  const reason = `the body is larger than ${WEBHOOK_BODY_LIMIT} bytes (256 KB)`;
  const id = await logRejected('rejected_too_large', reason, read.tooLarge);
  throw new AppError('payload_too_large', reason, { extensions: { delivery_id: id } });
}

/**
 * Logs a body that is not JSON and answers 400 (`parseJsonBody(body) ?? (await refuseInvalidJson(…))`);
 * `refused` is told the delivery id and the reason first.
 */
export async function refuseInvalidJson(
  body: Buffer,
  logRejected: LogRejected,
  refused?: (id: string, reason: string) => void,
): Promise<never> {
  const reason = body.length === 0 ? 'the body is empty; send a JSON value' : 'the body is not valid JSON (UTF-8)';
  const id = await logRejected('rejected_invalid_json', reason, body.length);
  refused?.(id, reason);
  throw new AppError('invalid_json', reason, { extensions: { delivery_id: id } });
}

/**
 * Answers what the delivery writer did: 202 with the delivery's id (a duplicate: the id of the one it repeats);
 * `gone()` when the endpoint went away meanwhile; 401 `changed` when its secret changed meanwhile.
 */
export function answerAccept(
  response: ServerResponse,
  result: AcceptOutcome,
  gone: () => AppError,
  changed: string,
): void {
  switch (result.outcome) {
    case 'accepted':
    case 'duplicate':
      sendDirect(
        response,
        202,
        { 'content-type': 'application/json; charset=utf-8' },
        JSON.stringify({ delivery_id: result.id }),
      );
      return;
    case 'gone':
      throw gone();
    case 'secret_changed':
      throw new AppError('webhook_unauthorized', changed, { extensions: { delivery_id: result.id } });
  }
}
