/**
 * The one place where this server's own run sources and failure codes meet the official clients'
 * enumerations (`RunSourceType`, `ErrorCode`; docs/api.md, "Official clients"). A run stores the fine value; the API
 * serves the client's value in `source` / `status_message.error_code` and the fine one beside it in
 * `source_detail` / `status_message.error_detail`, members the clients ignore.
 */

/** RunSourceType as the reference lists it; npm 1.0.0-alpha.8 declares the first nine, PyPI 0.15 all. */
export const CLIENT_RUN_SOURCES = [
  'LINEAR',
  'API',
  'SLACK',
  'LOCAL',
  'SCHEDULED_AGENT',
  'WEB_APP',
  'GITHUB_ACTION',
  'CLOUD_MODE',
  'CLI',
  'JIRA',
  'SELF_IMPROVEMENT',
  'GITHUB_WEBHOOK',
  'GITLAB_WEBHOOK',
  'AUTOFIX',
  'RUN_SCORER',
  'ORCHESTRATION',
] as const;
export type ClientRunSource = (typeof CLIENT_RUN_SOURCES)[number];

/**
 * Every source a run can be stored with → the `source` the clients are served. Add a row for a new kind of
 * run; its value must be one both official clients declare (test/compat/client-enums.test.ts checks).
 */
export const RUN_SOURCE_TABLE = {
  API: 'API',
  SCHEDULED_AGENT: 'SCHEDULED_AGENT',
  // A custom webhook delivery through an automation: it reached the server over HTTP, as API runs do.
  WEBHOOK: 'API',
  // Work sent to a factory by its id (POST /factories/{id}/runs).
  FACTORY: 'API',
  // Runs started by provider events (GitHub, Slack, Linear) through an automation.
  GITHUB_ACTION: 'GITHUB_ACTION',
  SLACK: 'SLACK',
  LINEAR: 'LINEAR',
  // A child run a factory's agent dispatched through the factory interface (dispatch_agent); served as API, as
  // the TypeScript client (1.0.0-alpha.8) declares no ORCHESTRATION.
  ORCHESTRATION: 'API',
} as const satisfies Record<string, ClientRunSource>;
export type RunSource = keyof typeof RUN_SOURCE_TABLE;

/** The stored sources, in table order. */
export const RUN_SOURCES = Object.keys(RUN_SOURCE_TABLE) as RunSource[];

/** What `GET /agent/runs?source=` accepts: a stored source or a client value. */
export const SOURCE_FILTER_VALUES: readonly string[] = [...new Set<string>([...RUN_SOURCES, ...CLIENT_RUN_SOURCES])];

export function clientSource(source: RunSource): ClientRunSource {
  return RUN_SOURCE_TABLE[source] ?? 'API';
}

/**
 * The stored sources a `source=` filter selects: the value itself when a run can be stored with it, and
 * every stored source served as it (`API` selects API, WEBHOOK and FACTORY runs; `WEBHOOK` only webhook runs).
 */
export function storedSourcesFor(filter: string): RunSource[] {
  return RUN_SOURCES.filter((s) => s === filter || RUN_SOURCE_TABLE[s] === filter);
}

/** PlatformErrorCode (the clients' `ErrorCode`) and whether the reference calls it retryable. */
export const CLIENT_ERROR_CODES = {
  insufficient_credits: false,
  feature_not_available: false,
  external_authentication_required: false,
  not_authorized: false,
  invalid_request: false,
  resource_not_found: false,
  budget_exceeded: false,
  integration_disabled: false,
  integration_not_configured: false,
  operation_not_supported: false,
  environment_setup_failed: false,
  content_policy_violation: false,
  conflict: true,
  authentication_required: false,
  resource_unavailable: true,
  internal_error: true,
} as const satisfies Record<string, boolean>;
export type ClientErrorCode = keyof typeof CLIENT_ERROR_CODES;

/**
 * Every `status_message.error_code` an executor, worker or the operator records → the code the clients are
 * served. A code not listed here (a self-hosted worker may report any) is served as `internal_error`.
 */
export const ERROR_CODE_TABLE = {
  // The agent's own process
  agent_failed: 'internal_error',
  agent_killed: 'resource_unavailable',
  agent_turn_limit: 'budget_exceeded',
  harness_auth_failed: 'external_authentication_required',
  harness_config_rejected: 'invalid_request',
  harness_unavailable: 'environment_setup_failed',
  // AGENTYARD_REQUIRE_SANDBOX is set and no sandbox (bubblewrap, a container engine) can run the agent
  sandbox_unavailable: 'environment_setup_failed',
  // Preparing the run
  environment_setup_failed: 'environment_setup_failed',
  secret_not_found: 'integration_not_configured',
  runner_unsupported: 'operation_not_supported',
  workspace_too_large: 'budget_exceeded',
  // The agent passed a limit of its execution (docs/execution.md, "Limits of an execution")
  event_limit_exceeded: 'budget_exceeded',
  output_limit_exceeded: 'budget_exceeded',
  run_too_large: 'invalid_request',
  // The executor or the Kubernetes Job under it
  executor_failed: 'internal_error',
  executor_stopped: 'resource_unavailable',
  lease_expired: 'resource_unavailable',
  job_create_failed: 'resource_unavailable',
  job_deleted: 'resource_unavailable',
  job_failed: 'internal_error',
  run_evicted: 'resource_unavailable',
  run_timed_out: 'budget_exceeded',
  // A run's budget (docs/governance.md, "Budgets"): error_detail names which
  max_duration_exceeded: 'budget_exceeded',
  max_tokens_exceeded: 'budget_exceeded',
  max_cost_exceeded: 'budget_exceeded',
  // The factory the run belonged to was deleted
  factory_deleted: 'resource_not_found',
} as const satisfies Record<string, ClientErrorCode>;

export function clientErrorCode(code: string): ClientErrorCode {
  if (Object.hasOwn(ERROR_CODE_TABLE, code)) return ERROR_CODE_TABLE[code as keyof typeof ERROR_CODE_TABLE];
  if (Object.hasOwn(CLIENT_ERROR_CODES, code)) return code as ClientErrorCode;
  return 'internal_error';
}

export interface ServedStatusMessage {
  message: string;
  error_code?: ClientErrorCode;
  /** The recorded code when it is finer than the client's. */
  error_detail?: string;
  retryable?: boolean;
}

/** A stored status message as the clients are served it. */
export function servedStatusMessage(stored: {
  message: string;
  error_code?: string;
  retryable?: boolean;
}): ServedStatusMessage {
  if (stored.error_code === undefined) return stored as ServedStatusMessage;
  const code = clientErrorCode(stored.error_code);
  return {
    ...stored,
    error_code: code,
    ...(code !== stored.error_code ? { error_detail: stored.error_code } : {}),
    retryable: stored.retryable ?? CLIENT_ERROR_CODES[code],
  };
}
