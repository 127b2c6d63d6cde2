import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, isAppError } from '../kernel/errors.ts';
import { problemFor, problemHeaders } from '../kernel/problem.ts';
import { redactedPath } from '../kernel/redact.ts';

/** Answers an error as its problem document (docs/errors.md). */
export function sendProblem(request: FastifyRequest, reply: FastifyReply, err: AppError): FastifyReply {
  return reply
    .headers(problemHeaders(err))
    .code(err.status)
    .type('application/problem+json')
    .send(problemFor(err, redactedPath(request.url), request.id));
}

export function toAppError(err: FastifyError): AppError {
  if (isAppError(err)) return err;
  if (err.validation) {
    const first = err.validation[0];
    const where = first
      ? `${err.validationContext ?? 'body'}${first.instancePath.replaceAll('/', '.')}`
      : err.validationContext;
    const params = (first?.params ?? {}) as Record<string, unknown>;
    const field = typeof params.missingProperty === 'string' ? `${where}.${params.missingProperty}` : where;
    return new AppError('invalid_request', `${field} ${first?.message ?? 'is invalid'}`.trim());
  }
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('invalid_json', err.message);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('payload_too_large', err.message);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('unsupported_media_type', err.message);
    default:
      break;
  }
  if (err instanceof SyntaxError) return new AppError('invalid_json', err.message);
  if (err.statusCode === 413) return new AppError('payload_too_large', err.message);
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500)
    return new AppError('invalid_request', err.message);
  return new AppError('internal_error', undefined, { cause: err });
}
