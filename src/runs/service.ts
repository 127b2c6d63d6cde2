import { createHash } from 'node:crypto';
import { AppError } from '../kernel/errors.ts';
import type { Bus } from '../kernel/bus.ts';
import type { Db, Queryable } from '../kernel/db.ts';
import { newId, timeOrderedUuid } from '../kernel/ids.ts';
import type { ActsAs, AgentConfig, Creator, McpServerConfig, RunRow, RunSource } from '../engine/model.ts';
import * as sql from './sql.ts';
import { isTerminal } from '../engine/state-machine.ts';
import { resolveAgentIdentity } from '../identity/agent-identities.ts';
import { RunInsertBatcher } from '../engine/insert-batcher.ts';
import * as engine from '../engine/engine.ts';
import { announceQueuedLocally, announceRunChanges, queuedWireMessages } from '../engine/announce.ts';
import { enforceDailyCaps, runCaps } from './daily-caps.ts';
import type { RunCaps } from './daily-caps.ts';
import type { RunHandOff } from '../engine/hand-off.ts';
import type { RunChange } from '../engine/announce.ts';

/** Reserved `worker_host` values that mean "the service's own executors". */
export const SERVICE_WORKER_HOSTS: ReadonlySet<string> = new Set(['service', 'warp']);

export interface Attachment {
  fileName: string;
  mimeType: string;
  data: Buffer;
}

export interface CreateRunInput {
  teamId: string;
  prompt?: string | undefined;
  title?: string | undefined;
  skill?: string | undefined;
  config?: AgentConfig | undefined;
  source: RunSource;
  creator: Creator | null;
  /** Execute as this agent identity of the team (`agent_identity_uid`); 404 when it is not the team's. */
  agentIdentityUid?: string | null;
  factoryId?: string | null;
  automationId?: string | null;
  deliveryId?: string | null;
  scheduleId?: string | null;
  parentRunId?: string | null;
  /** The caller read `parentRunId` as a run of this team in this request (a run token's own run): not read again. */
  parentKnown?: boolean;
  conversationId?: string | null;
  attachments?: Attachment[];
  metadata?: Record<string, string>;
  /**
   * credentialStrategy CREATOR: the verified sender of the signed provider event the server creates this run
   * from. Only the server sets it, never from a request; run metadata never decides whom a run acts as.
   */
  actsAs?: ActsAs | null;
  /**
   * The factory's daily caps for this run, resolved by the caller from the definition it created the run from
   * (null: none apply); absent, they are read with the factory.
   */
  knownCaps?: RunCaps | null;
  /**
   * A dispatched child whose parent's run token was not checked in this request: the statement that inserts it
   * checks it (the hand-off only). Without a hand-off to take it, or when the check does not hold,
   * `create` throws DispatchGuardFailed and nothing is created.
   */
  dispatchGuard?: engine.DispatchGuard;
}

/** A guarded creation did not happen: the guard's check did not hold, or nothing could make it (no hand-off). */
export class DispatchGuardFailed extends Error {}

const MAX_TITLE = 120;

export function titleFromPrompt(prompt: string, fallback: string): string {
  const firstLine =
    prompt
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l.length > 0) ?? '';
  if (!firstLine) return fallback;
  return firstLine.length > MAX_TITLE ? `${firstLine.slice(0, MAX_TITLE - 1).trimEnd()}…` : firstLine;
}

function checkMcpServers(servers: Record<string, McpServerConfig>): void {
  for (const [name, server] of Object.entries(servers)) {
    const kinds = (['warp_id', 'command', 'url'] as const).filter((k) => server[k] !== undefined && server[k] !== '');
    if (kinds.length !== 1) {
      throw new AppError(
        'invalid_request',
        `config.mcp_servers.${name} must set exactly one of warp_id, command or url`,
      );
    }
    if (server.url !== undefined && !URL.canParse(server.url)) {
      throw new AppError('invalid_request', `config.mcp_servers.${name}.url is not a valid URL`);
    }
  }
}

const METADATA_KEY = /^[a-zA-Z0-9._-]{1,64}$/;

/** Run metadata: at most 20 keys of [a-zA-Z0-9._-], string values of at most 256 bytes. */
export function checkMetadata(metadata: Record<string, string>): void {
  const entries = Object.entries(metadata);
  if (entries.length > 20) throw new AppError('invalid_request', 'metadata has more than 20 keys');
  for (const [key, value] of entries) {
    if (!METADATA_KEY.test(key))
      throw new AppError('invalid_request', `metadata key "${key}" must be 1-64 characters of [a-zA-Z0-9._-]`);
    if (typeof value !== 'string' || Buffer.byteLength(value) > 256 || value.includes('\0')) {
      throw new AppError('invalid_request', `metadata.${key} must be a string of at most 256 bytes without NUL`);
    }
  }
}

/** Validates and resolves the request's configuration into what the run records and executes. */
export function resolveConfig(input: {
  prompt?: string | undefined;
  skill?: string | undefined;
  config?: AgentConfig | undefined;
}): AgentConfig {
  const config: AgentConfig = { ...(input.config ?? {}) };
  if (input.skill) config.skill_spec = input.skill;
  if (config.skill_spec !== undefined && !/^[^\s:]+:.+$/.test(config.skill_spec)) {
    throw new AppError(
      'invalid_request',
      'skill must look like "repo:skill", "owner/repo:skill" or "owner/repo:path/to/SKILL.md"',
    );
  }
  if (!input.prompt?.trim() && !config.skill_spec) {
    throw new AppError('invalid_request', 'prompt is required (or a skill, or config.skill_spec)');
  }
  if (config.skill_spec && config.name === undefined) {
    const skillName = config.skill_spec
      .split(':')
      .pop()!
      .replace(/\/SKILL\.md$/i, '')
      .split('/')
      .pop();
    if (skillName) config.name = skillName;
  }
  if (config.mcp_servers) checkMcpServers(config.mcp_servers);
  if (config.harness?.base_url !== undefined) checkBaseUrl(config.harness.base_url);
  if (
    config.idle_timeout_minutes !== undefined &&
    (config.idle_timeout_minutes < 1 || config.idle_timeout_minutes > 60)
  ) {
    throw new AppError('invalid_request', 'config.idle_timeout_minutes must be between 1 and 60');
  }
  // Python SDK 0.11 sends `harness.auth_secret_name`; the spec calls it harness_auth_secrets.
  const legacyHarness = config.harness as (AgentConfig['harness'] & { auth_secret_name?: string }) | undefined;
  if (legacyHarness?.auth_secret_name) {
    const { auth_secret_name: secretName, ...rest } = legacyHarness;
    config.harness = rest;
    config.harness_auth_secrets = { claude_auth_secret_name: secretName, ...(config.harness_auth_secrets ?? {}) };
  }
  return config;
}

/** `harness.base_url` (the built-in agent's endpoint): an http(s) URL without credentials. */
function checkBaseUrl(raw: unknown): void {
  let url: URL | undefined;
  try {
    url = typeof raw === 'string' ? new URL(raw) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
    throw new AppError(
      'invalid_request',
      'config.harness.base_url must be an http or https URL, such as http://vllm:8000/v1',
    );
  if (url.username || url.password)
    throw new AppError(
      'invalid_request',
      'config.harness.base_url must not carry credentials: name a managed secret in harness_auth_secrets.agentyard_auth_secret_name',
    );
}

export function workerHostOf(config: AgentConfig): string | null {
  const host = config.worker_host?.trim();
  return host && !SERVICE_WORKER_HOSTS.has(host) ? host : null;
}

/** Validates a creation request and resolves it into the row to insert (the agent identity is looked up in `q`). */
export async function prepareQueuedRun(q: Queryable, input: CreateRunInput): Promise<engine.InsertRun> {
  const config = resolveConfig(input);
  if (input.metadata) checkMetadata(input.metadata);
  const prompt = input.prompt ?? '';
  // Another team's run ids answer as ids that do not exist.
  if (input.parentRunId && !input.parentKnown && !(await sql.getRun(q, input.teamId, input.parentRunId)))
    throw new AppError('resource_not_found', `parent_run_id: run ${input.parentRunId} does not exist`);
  if (input.conversationId && !(await sql.conversationExists(q, input.teamId, input.conversationId)))
    throw new AppError('resource_not_found', `conversation_id: conversation ${input.conversationId} does not exist`);
  const identity = input.agentIdentityUid
    ? await resolveAgentIdentity(q, input.teamId, input.agentIdentityUid)
    : undefined;
  return {
    id: newId('run'),
    teamId: input.teamId,
    title: input.title?.trim() || titleFromPrompt(prompt, config.name ?? config.skill_spec ?? 'Untitled run'),
    prompt,
    state: 'QUEUED',
    source: input.source,
    config,
    workerHost: workerHostOf(config),
    creator: input.creator,
    executor: identity
      ? { id: identity.principal_id, type: 'service_account', displayName: identity.name }
      : input.creator,
    factoryId: input.factoryId ?? null,
    automationId: input.automationId ?? null,
    deliveryId: input.deliveryId ?? null,
    scheduleId: input.scheduleId ?? null,
    parentRunId: input.parentRunId ?? null,
    conversationId: input.conversationId ?? null,
    // time-ordered (UUIDv7), so that its index takes new ids at one end as it does run ids
    sessionId: timeOrderedUuid(),
    metadata: input.metadata ?? {},
  };
}

/** The daily caps a run of a factory is checked against (undefined: none, or no factory). */
function capsOf(q: Queryable, input: CreateRunInput): Promise<RunCaps | undefined> {
  if (input.knownCaps !== undefined) return Promise.resolve(input.knownCaps ?? undefined);
  if (!input.factoryId) return Promise.resolve(undefined);
  const name = input.config?.name;
  return runCaps(q, {
    factoryId: input.factoryId,
    automationId: input.automationId ?? null,
    configName: typeof name === 'string' ? name : null,
  });
}

/**
 * Inserts a queued run in `q` (a transaction) with its attachments, after its factory's daily caps (`caps`: read
 * already; undefined: read here).
 */
async function insertQueuedRun(
  q: Queryable,
  input: CreateRunInput,
  known?: { caps: RunCaps | undefined },
): Promise<RunRow> {
  const caps = known ? known.caps : await capsOf(q, input);
  if (caps) await enforceDailyCaps(q, caps);
  const row = await engine.insertRun(q, await prepareQueuedRun(q, input));
  for (const attachment of input.attachments ?? []) await sql.insertAttachment(q, row.id, attachment);
  if (input.actsAs) return engine.setRunActsAs(q, row.id, input.actsAs);
  return row;
}

function requestHash(body: unknown): string {
  const canonical = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(canonical);
    if (value && typeof value === 'object') {
      return Object.fromEntries(
        Object.keys(value as object)
          .sort()
          .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
      );
    }
    return value;
  };
  return createHash('sha256')
    .update(JSON.stringify(canonical(body) ?? null))
    .digest('hex');
}

/** How a run is created; see RunService.create. */
export interface CreateRunOptions {
  /** The same key and body within 24 hours answer the run created the first time; another body is refused. */
  idempotency?: { key: string; body: unknown } | undefined;
}

/** A run created in a caller's transaction: it commits with the caller's other writes. */
export interface CreateRunWithin {
  within: Queryable;
}

/** Another request claimed the same idempotency key between our look-up and our claim. */
class IdempotencyRace extends Error {}

export class RunService {
  readonly #db: Db;
  readonly #bus: Bus;

  readonly #batcher: RunInsertBatcher;
  #handOff: RunHandOff | undefined;

  constructor(db: Db, bus: Bus) {
    this.#db = db;
    this.#bus = bus;
    this.#batcher = new RunInsertBatcher(db, {
      notifications: (runs) =>
        queuedWireMessages(
          bus,
          runs.map((r) => ({ id: r.id, worker_host: r.workerHost })),
        ),
      inserted: (runs) => announceQueuedLocally(bus, runs),
    });
  }

  /** Lets this service's run creations go through `handOff`; answers the function that stops it. */
  offerHandOff(handOff: RunHandOff): () => void {
    this.#handOff = handOff;
    return () => {
      if (this.#handOff === handOff) this.#handOff = undefined;
    };
  }

  /**
   * The one way to create a run. On its own, the run is written and announced here: a plain run goes with the
   * other creations of the moment, to the executors' hand-off when they have a free slot (claimed in the
   * statement that inserts it) or to the group-commit insert; a run with attachments or an idempotency key is
   * written in a transaction of its own (`replayed: true` when the key answers an earlier run). `within` a
   * caller's transaction, the run commits with the caller's writes and the caller calls `announce` after its
   * commit.
   */
  create(input: CreateRunInput, options: CreateRunWithin): Promise<{ run: RunRow; replayed: false }>;
  create(input: CreateRunInput, options?: CreateRunOptions): Promise<{ run: engine.CreatedRun; replayed: boolean }>;
  async create(
    input: CreateRunInput,
    options: CreateRunOptions | CreateRunWithin = {},
  ): Promise<{ run: engine.CreatedRun; replayed: boolean }> {
    if ('within' in options) return { run: await insertQueuedRun(options.within, input), replayed: false };
    const { idempotency } = options;
    // a run under daily caps is created in a transaction of its own, under the daily caps' lock
    const caps = await capsOf(this.#db, input);
    const plain = !idempotency && !input.attachments?.length && !input.actsAs && !caps;
    if (input.dispatchGuard) {
      // only the hand-off's statement checks a guard
      const row = plain ? await prepareQueuedRun(this.#db, input) : undefined;
      const handed = row ? this.#handOff?.create({ ...row, guard: input.dispatchGuard }) : undefined;
      if (!handed) throw new DispatchGuardFailed('no hand-off takes a guarded run now');
      try {
        return { run: await handed, replayed: false };
      } catch (err) {
        if (engine.isDispatchGuardRefusal(err)) throw new DispatchGuardFailed('the run token check did not hold');
        throw err;
      }
    }
    if (plain) {
      // The common case needs no transaction: one row, written with the other creations of the moment.
      const row = await prepareQueuedRun(this.#db, input);
      const run = await (this.#handOff?.create(row) ?? this.#batcher.insert(row));
      return { run, replayed: false };
    }
    const hash = idempotency ? requestHash(idempotency.body) : undefined;
    const attempt = () =>
      this.#db.transaction(async (tx) => {
        if (idempotency && hash) {
          const existing = await sql.findIdempotencyKey(tx, input.teamId, idempotency.key);
          if (existing) return this.#replay(tx, input.teamId, existing, hash);
        }
        const run = await insertQueuedRun(tx, input, { caps });
        if (idempotency && hash && !(await sql.claimIdempotencyKey(tx, input.teamId, idempotency.key, hash, run.id))) {
          throw new IdempotencyRace();
        }
        return { run, replayed: false };
      });
    let result: { run: RunRow; replayed: boolean };
    try {
      result = await attempt();
    } catch (err) {
      if (!(err instanceof IdempotencyRace)) throw err;
      // A concurrent request with the same key committed first (the claim waited for it): our run was rolled
      // back, and the second attempt answers theirs, or 422 if their body differed.
      result = await attempt().catch((again: unknown) => {
        if (again instanceof IdempotencyRace)
          throw new AppError('conflict', 'a request with this Idempotency-Key is in progress; retry');
        throw again;
      });
    }
    if (!result.replayed) this.announce([result.run]);
    return result;
  }

  async #replay(
    tx: Queryable,
    teamId: string,
    existing: { request_hash: string; run_id: string },
    hash: string,
  ): Promise<{ run: RunRow; replayed: boolean }> {
    if (existing.request_hash !== hash) {
      throw new AppError(
        'idempotency_key_reused',
        'this Idempotency-Key was used with a different request body in the last 24 hours',
      );
    }
    const run = await sql.getRun(tx, teamId, existing.run_id);
    if (!run) throw new AppError('resource_not_found', `run ${existing.run_id}`);
    return { run, replayed: true };
  }

  /**
   * Wakes the executors for runs created `within` a transaction, once it has committed: one hint per worker
   * host among the new runs (a hint means "look at the queue", so the runs created together need one, not one
   * each). A lost hint only delays them until the executors' next poll, so nobody waits for it.
   */
  announce(runs: readonly Pick<engine.CreatedRun, 'id' | 'worker_host'>[]): void {
    void announceRunChanges(
      this.#bus,
      runs.map((r) => ({ ...r, state: 'QUEUED', created: true })),
    );
  }

  /** Makes known runs a caller's committed transaction moved (cancelled by a newer run of their concurrency key). */
  async announceMoved(changes: readonly RunChange[]): Promise<void> {
    if (changes.length > 0) await announceRunChanges(this.#bus, changes);
  }

  async get(teamId: string, runId: string): Promise<RunRow> {
    const run = await sql.getRun(this.#db, teamId, runId);
    if (!run) throw new AppError('resource_not_found', `run ${runId} does not exist`);
    return run;
  }

  async cancel(teamId: string, runId: string): Promise<RunRow> {
    const run = await this.get(teamId, runId);
    if (run.state === 'PENDING') {
      throw new AppError('conflict', 'the run is being set up; retry shortly', { headers: { 'retry-after': '1' } });
    }
    if (isTerminal(run.state)) {
      throw new AppError('invalid_request', `run ${runId} is already ${run.state} and cannot be cancelled`);
    }
    // The runs it started (`parent_run_id`, any depth) are cancelled with it.
    const moved = await engine.cancelRunTree(
      this.#db,
      teamId,
      runId,
      'Cancelled by request',
      `Cancelled with its ancestor ${runId}`,
    );
    await announceRunChanges(this.#bus, moved);
    const cancelled = moved.find((r) => r.id === runId);
    if (!cancelled) {
      const now = await this.get(teamId, runId);
      if (now.state === 'CANCELLED') return now;
      throw new AppError('invalid_request', `run ${runId} is already ${now.state} and cannot be cancelled`);
    }
    return cancelled;
  }

  async followups(teamId: string, runId: string): Promise<sql.FollowupRow[]> {
    await this.get(teamId, runId);
    return sql.listFollowups(this.#db, runId);
  }

  /**
   * Records a follow-up. To an active run it waits for the agent's next turn; a finished run is queued again
   * for a new execution that continues the conversation.
   */
  async followup(
    teamId: string,
    runId: string,
    input: { message: string; mode: string; creatorId: string | null; admin?: boolean },
  ): Promise<{ followupId: string; run: RunRow }> {
    const { admin = false, ...followup } = input;
    const { followupId, run, requeued } = await this.#db.transaction(async (tx) => {
      const current = await sql.getRun(tx, teamId, runId);
      if (!current) throw new AppError('resource_not_found', `run ${runId} does not exist`);
      // a run acting as a member continues with that member's tokens: only they (or an admin) say what it does next
      if (current.acts_as && !admin && (await sql.actsAsSubject(tx, teamId, current.acts_as)) !== input.creatorId) {
        throw new AppError(
          'not_authorized',
          `run ${runId} acts as the ${current.acts_as.provider} account ${current.acts_as.account ?? '(unknown)'} (credentialStrategy CREATOR): only the member who linked it or a team admin may send it follow-ups`,
        );
      }
      const f = await sql.insertFollowup(tx, { id: newId('fu'), runId, teamId, ...followup });
      if (isTerminal(current.state)) {
        const requeuedRun = await engine.applyRunEvent(tx, runId, 'continue', { teamId, statusMessage: null });
        return { followupId: f.id, run: requeuedRun ?? current, requeued: requeuedRun !== undefined };
      }
      await engine.touchRun(tx, runId);
      return { followupId: f.id, run: current, requeued: false };
    });
    await announceRunChanges(this.#bus, [
      { id: runId, worker_host: run.worker_host, followupId, ...(requeued ? { state: run.state } : {}) },
    ]);
    return { followupId, run };
  }
}
