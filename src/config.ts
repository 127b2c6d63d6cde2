import path from 'node:path';

export type Role = 'ingress' | 'api' | 'controller' | 'executor' | 'scheduler';
export const ALL_ROLES: readonly Role[] = ['ingress', 'api', 'controller', 'executor', 'scheduler'];

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** PostgreSQL server; the embedded PGlite engine in `dataDir` when absent. */
  databaseUrl: string | undefined;
  bootstrapApiKey: string | undefined;
  masterKey: string | undefined;
  /** Public base URL of this server (session links, ingress URLs), without a trailing slash. */
  publicUrl: string;
  /** Base URL of the webhook ingress; the public URL when not set separately. */
  webhookBaseUrl: string;
  logLevel: string;
  /** `pretty` (readable lines) or `json` (one object per line): LOG_FORMAT, else pretty on a terminal. */
  logFormat: LogFormat;
  roles: ReadonlySet<Role>;
  /** A factory to reconcile on start: a directory path or a git URL (`serve --factory`). */
  factory: string | undefined;
  /** `GET /agent/models`: model ids (comma-separated, first = default) or a JSON document (AGENTYARD_MODELS). */
  agentModels: string | undefined;
  /**
   * The built-in agent's model ids on this instance's endpoint (AGENTYARD_OPENAI_MODEL, then AGENTYARD_OPENAI_MODELS,
   * comma-separated): catalogued, so factories and runs may name them.
   */
  builtinModels?: readonly string[];
  /** `closed`: runs and factories may name only catalogued models (AGENTYARD_MODEL_CATALOGUE, default `open`). */
  modelCatalogue: 'open' | 'closed';
  /** `POST /factory-files/validate` requests per minute from one client address; 0 = no limit (AGENTYARD_VALIDATE_RATE_LIMIT). */
  validateRateLimit: number;
  /** Failed API-key attempts per minute from one client address before it is refused (429); 0 = no limit (AGENTYARD_AUTH_FAILURE_LIMIT). */
  authFailureLimit: number;
  /** Provider events (GitHub, Slack, Linear) per minute per connection (AGENTYARD_PROVIDER_EVENTS_PER_MINUTE). */
  providerEventsPerMinute: number;
  /**
   * Embedded PGlite only (it has no autovacuum): seconds between checks for tables due an ANALYZE or VACUUM;
   * 0 = never (AGENTYARD_PGLITE_MAINTENANCE_SECONDS).
   */
  pgliteMaintenanceSeconds: number;
  /** Longest one factory-tree validation may take on its worker thread (AGENTYARD_VALIDATION_TIMEOUT_MS). */
  validationTimeoutMs: number;
  /** Heap of a validation worker thread, MiB (AGENTYARD_VALIDATION_MEMORY_MB). */
  validationMemoryMb: number;
  /** Longest a validate request waits for a thread before 429 resource_unavailable (AGENTYARD_VALIDATION_QUEUE_WAIT_MS). */
  validationQueueWaitMs: number;
  /** What a git or directory source may hold, counted before any content is read. */
  sourceLimits: SourceLimits;
  /**
   * Hosts git sources may reach although they resolve to loopback, link-local or private addresses
   * (AGENTYARD_SOURCE_ALLOWED_HOSTS, comma-separated host names or `host:port`).
   */
  sourceAllowedHosts: readonly string[];
  /**
   * Host names the factory interface answers to besides loopback and its public URLs' hosts, e.g. the name a
   * reverse proxy forwards as `Host` (AGENTYARD_MCP_ALLOWED_HOSTS, comma-separated).
   */
  mcpAllowedHosts: readonly string[];
  /** Seconds a client has to send a request's headers and body; then 408 (AGENTYARD_BODY_TIMEOUT_SECONDS). */
  bodyTimeoutSeconds: number;
  /** Lifetime of the signed session links in run answers (AGENTYARD_SESSION_LINK_TTL_SECONDS). */
  sessionLinkTtlSeconds: number;
}

export interface SourceLimits {
  /** Files the loader would read (AGENTYARD_SOURCE_MAX_FILES). */
  files: number;
  /** Bytes of one such file (AGENTYARD_SOURCE_MAX_FILE_BYTES). */
  fileBytes: number;
  /** Bytes of them all (AGENTYARD_SOURCE_MAX_BYTES). */
  totalBytes: number;
}

export const DEFAULT_SOURCE_LIMITS: SourceLimits = { files: 2000, fileBytes: 256 * 1024, totalBytes: 8 * 1024 * 1024 };

function envPositive(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = envInt(env, name, fallback);
  if (value === 0) throw new Error(`${name} must be a positive integer, got "0"`);
  return value;
}

function envInt(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return value;
}

export type LogFormat = 'json' | 'pretty';

/**
 * `LOG_FORMAT` (`json` or `pretty`) when set; otherwise readable lines when stdout is a terminal and one JSON
 * object per line when it is a pipe or a file (what log collectors read).
 */
export function parseLogFormat(raw: string | undefined, isTty: boolean): LogFormat {
  const chosen = raw?.trim().toLowerCase();
  if (chosen === 'json' || chosen === 'pretty') return chosen;
  if (chosen) throw new Error(`LOG_FORMAT must be json or pretty, got "${raw}"`);
  return isTty ? 'pretty' : 'json';
}

export function parseCatalogueMode(raw: string | undefined): 'open' | 'closed' {
  const mode = (raw ?? '').trim().toLowerCase() || 'open';
  if (mode !== 'open' && mode !== 'closed')
    throw new Error(`AGENTYARD_MODEL_CATALOGUE must be "open" or "closed", got "${raw}"`);
  return mode;
}

export function parseRoles(raw: string | undefined): ReadonlySet<Role> {
  if (!raw) return new Set(ALL_ROLES);
  const roles = new Set<Role>();
  for (const part of raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    if (!(ALL_ROLES as readonly string[]).includes(part)) {
      throw new Error(`unknown role "${part}" (expected some of ${ALL_ROLES.join(', ')})`);
    }
    roles.add(part as Role);
  }
  return roles;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}): Config {
  const port = overrides.port ?? envInt(env, 'PORT', 8080);
  const host = overrides.host ?? env.HOST ?? '0.0.0.0';
  const publicUrl = (overrides.publicUrl ?? env.AGENTYARD_PUBLIC_URL ?? `http://localhost:${port}`).replace(/\/+$/, '');
  return {
    port,
    host,
    dataDir: path.resolve(overrides.dataDir ?? env.AGENTYARD_DATA_DIR ?? '.agentyard'),
    databaseUrl: overrides.databaseUrl ?? (env.DATABASE_URL || undefined),
    bootstrapApiKey: overrides.bootstrapApiKey ?? (env.AGENTYARD_BOOTSTRAP_API_KEY || undefined),
    masterKey: overrides.masterKey ?? (env.AGENTYARD_MASTER_KEY || undefined),
    publicUrl,
    webhookBaseUrl: (overrides.webhookBaseUrl ?? env.AGENTYARD_WEBHOOK_BASE_URL ?? publicUrl).replace(/\/+$/, ''),
    logLevel: overrides.logLevel ?? env.LOG_LEVEL ?? 'info',
    logFormat: overrides.logFormat ?? parseLogFormat(env.LOG_FORMAT, Boolean(process.stdout.isTTY)),
    roles: overrides.roles ?? parseRoles(env.AGENTYARD_ROLES),
    factory: overrides.factory ?? (env.AGENTYARD_FACTORY || undefined),
    agentModels: overrides.agentModels ?? (env.AGENTYARD_MODELS || undefined),
    builtinModels: overrides.builtinModels ?? builtinModelIds(env),
    modelCatalogue: overrides.modelCatalogue ?? parseCatalogueMode(env.AGENTYARD_MODEL_CATALOGUE),
    validateRateLimit: overrides.validateRateLimit ?? envInt(env, 'AGENTYARD_VALIDATE_RATE_LIMIT', 30),
    authFailureLimit: overrides.authFailureLimit ?? envInt(env, 'AGENTYARD_AUTH_FAILURE_LIMIT', 20),
    providerEventsPerMinute:
      overrides.providerEventsPerMinute ?? envPositive(env, 'AGENTYARD_PROVIDER_EVENTS_PER_MINUTE', 6_000),
    pgliteMaintenanceSeconds:
      overrides.pgliteMaintenanceSeconds ?? envInt(env, 'AGENTYARD_PGLITE_MAINTENANCE_SECONDS', 60),
    validationTimeoutMs: overrides.validationTimeoutMs ?? envPositive(env, 'AGENTYARD_VALIDATION_TIMEOUT_MS', 10_000),
    validationMemoryMb: overrides.validationMemoryMb ?? envPositive(env, 'AGENTYARD_VALIDATION_MEMORY_MB', 256),
    validationQueueWaitMs:
      overrides.validationQueueWaitMs ?? envPositive(env, 'AGENTYARD_VALIDATION_QUEUE_WAIT_MS', 5_000),
    sourceLimits: overrides.sourceLimits ?? {
      files: envPositive(env, 'AGENTYARD_SOURCE_MAX_FILES', DEFAULT_SOURCE_LIMITS.files),
      fileBytes: envPositive(env, 'AGENTYARD_SOURCE_MAX_FILE_BYTES', DEFAULT_SOURCE_LIMITS.fileBytes),
      totalBytes: envPositive(env, 'AGENTYARD_SOURCE_MAX_BYTES', DEFAULT_SOURCE_LIMITS.totalBytes),
    },
    sourceAllowedHosts:
      overrides.sourceAllowedHosts ??
      (env.AGENTYARD_SOURCE_ALLOWED_HOSTS ?? '')
        .split(',')
        .map((h) => h.trim().toLowerCase())
        .filter(Boolean),
    mcpAllowedHosts:
      overrides.mcpAllowedHosts ??
      (env.AGENTYARD_MCP_ALLOWED_HOSTS ?? '')
        .split(',')
        .map((h) => h.trim().toLowerCase())
        .filter(Boolean),
    bodyTimeoutSeconds: overrides.bodyTimeoutSeconds ?? envPositive(env, 'AGENTYARD_BODY_TIMEOUT_SECONDS', 60),
    sessionLinkTtlSeconds:
      overrides.sessionLinkTtlSeconds ?? envPositive(env, 'AGENTYARD_SESSION_LINK_TTL_SECONDS', 7 * 24 * 3600),
  };
}

/** The built-in agent's model ids from AGENTYARD_OPENAI_MODEL and AGENTYARD_OPENAI_MODELS, without duplicates. */
export function builtinModelIds(env: NodeJS.ProcessEnv): string[] {
  const ids = [env.AGENTYARD_OPENAI_MODEL ?? '', ...(env.AGENTYARD_OPENAI_MODELS ?? '').split(',')]
    .map((s) => s.trim())
    .filter(Boolean);
  return [...new Set(ids)];
}
