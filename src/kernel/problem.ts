import type { AppError } from './errors.ts';

/**
 * The problem `type` is a reference relative to the server that answered: `/docs/errors#<code>`, the page
 * every server serves (src/http/error-docs.ts) from docs/errors.md.
 */
export const ERROR_TYPE_BASE = '/docs/errors#';

/** The RFC 7807 document, with the Oz API's members (`error` is the legacy "title (detail)" string). */
export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  error: string;
  code: string;
  detail: string;
  instance?: string;
  retryable: boolean;
  trace_id?: string;
  [extension: string]: unknown;
}

/** The headers of an error's answer: its own, and `x-should-retry: false` where retrying cannot help. */
export function problemHeaders(err: AppError): Record<string, string> {
  // The official clients retry every 409 and 5xx.
  return !err.retryable && (err.status === 409 || err.status >= 500)
    ? { ...err.headers, 'x-should-retry': 'false' }
    : err.headers;
}

export function problemFor(err: AppError, instance: string | undefined, traceId: string | undefined): ProblemDocument {
  return {
    type: `${ERROR_TYPE_BASE}${err.code}`,
    title: err.title,
    status: err.status,
    error: err.detail ? `${err.title} (${err.detail})` : err.title,
    code: err.code,
    // Always present, so that clients can show one member; the title when there is nothing more specific.
    detail: err.detail ?? err.title,
    ...(instance ? { instance } : {}),
    retryable: err.retryable,
    ...(traceId ? { trace_id: traceId } : {}),
    ...err.extensions,
  };
}
