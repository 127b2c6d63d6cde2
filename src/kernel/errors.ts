/**
 * The error catalogue: every error the API and the ingress answer with is declared here once, with its
 * HTTP status, title and whether a client may retry. `docs/errors.md` lists the same codes; a test keeps the
 * two in step. Codes follow the Oz API's PlatformErrorCode where one fits (docs/errors.md).
 */
export interface ErrorSpec {
  status: number;
  title: string;
  retryable: boolean;
}

export const ERROR_CATALOGUE = {
  // Oz API platform error codes
  invalid_request: { status: 400, title: 'Invalid request', retryable: false },
  authentication_required: { status: 401, title: 'Authentication required', retryable: false },
  not_authorized: { status: 403, title: 'Not authorized', retryable: false },
  feature_not_available: { status: 403, title: 'Feature not available', retryable: false },
  resource_not_found: { status: 404, title: 'Resource not found', retryable: false },
  conflict: { status: 409, title: 'Conflict', retryable: true },
  operation_not_supported: { status: 422, title: 'Operation not supported', retryable: false },
  resource_unavailable: { status: 429, title: 'Resource unavailable', retryable: true },
  internal_error: { status: 500, title: 'Internal error', retryable: true },
  environment_setup_failed: { status: 500, title: 'Environment setup failed', retryable: false },
  // HTTP-level errors
  route_not_found: { status: 404, title: 'No such route', retryable: false },
  method_not_allowed: { status: 405, title: 'Method not allowed', retryable: false },
  invalid_json: { status: 400, title: 'Body is not valid JSON', retryable: false },
  payload_too_large: { status: 413, title: 'Body too large', retryable: false },
  unsupported_media_type: { status: 415, title: 'Unsupported media type', retryable: false },
  rate_limited: { status: 429, title: 'Too many requests', retryable: true },
  invalid_string: { status: 400, title: 'String is not storable text', retryable: false },
  invalid_timestamp: { status: 400, title: 'Timestamp out of range', retryable: false },
  json_too_deep: { status: 400, title: 'JSON nested too deeply', retryable: false },
  request_timeout: { status: 408, title: 'Request not received in time', retryable: true },
  // Agentyard resources
  team_name_taken: { status: 409, title: 'Team name already in use', retryable: false },
  idempotency_key_reused: { status: 422, title: 'Idempotency key reused with another request', retryable: false },
  factory_read_only: { status: 409, title: 'Factory is read-only', retryable: false },
  factory_name_taken: { status: 409, title: 'Factory name already in use', retryable: false },
  definition_invalid: { status: 422, title: 'Factory definition is invalid', retryable: false },
  webhook_limit_reached: { status: 422, title: 'Webhook limit reached', retryable: false },
  webhook_rename_unsupported: { status: 422, title: 'Renaming a webhook is not supported', retryable: false },
  webhook_name_taken: { status: 409, title: 'Webhook name already in use', retryable: false },
  automation_name_taken: { status: 409, title: 'Automation name already in use', retryable: false },
  secret_not_found: { status: 404, title: 'Secret not found', retryable: false },
  secret_not_owned: { status: 403, title: 'Secret is not yours', retryable: false },
  schedule_not_owned: { status: 403, title: 'Schedule is not yours', retryable: false },
  secret_not_url_safe: { status: 422, title: 'Secret is not URL-safe', retryable: false },
  session_link_expired: { status: 410, title: 'Session link expired', retryable: false },
  download_url_expired: { status: 403, title: 'Download URL expired', retryable: false },
  download_url_invalid: { status: 403, title: 'Download URL invalid', retryable: false },
  model_unknown: { status: 422, title: 'Unknown model', retryable: false },
  provider_token_rejected: { status: 422, title: 'Provider refused the token', retryable: false },
  provider_identity_taken: { status: 409, title: 'Provider account linked by another member', retryable: false },
  provider_unreachable: { status: 502, title: 'Provider did not answer', retryable: true },
  daily_cap_reached: { status: 429, title: 'Daily cap reached', retryable: true },
  // Webhook ingress
  webhook_not_found: { status: 404, title: 'Webhook not found', retryable: false },
  webhook_unauthorized: { status: 401, title: 'Webhook authentication failed', retryable: false },
  webhook_rate_limited: { status: 429, title: 'Too many deliveries', retryable: true },
  webhook_auth_rate_limited: { status: 429, title: 'Too many failed authentication attempts', retryable: true },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export interface AppErrorOptions {
  detail?: string;
  headers?: Record<string, string>;
  /** Extension members added to the problem document. */
  extensions?: Record<string, unknown>;
  cause?: unknown;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly title: string;
  readonly retryable: boolean;
  readonly detail: string | undefined;
  readonly headers: Record<string, string>;
  readonly extensions: Record<string, unknown>;

  constructor(code: ErrorCode, detail?: string, options: Omit<AppErrorOptions, 'detail'> = {}) {
    const spec: ErrorSpec = ERROR_CATALOGUE[code];
    super(detail ? `${spec.title}: ${detail}` : spec.title, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = spec.status;
    this.title = spec.title;
    this.retryable = spec.retryable;
    this.detail = detail;
    this.headers = options.headers ?? {};
    this.extensions = options.extensions ?? {};
  }
}

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}
