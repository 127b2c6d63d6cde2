import { FACTORIES_CHANGED_TOPIC, WEBHOOKS_CHANGED_TOPIC } from '../kernel/topics.ts';
import path from 'node:path';
import { authorizeRunSecrets } from './secret-grants.ts';
import { agentRunCaps } from '../runs/daily-caps.ts';
import type { DispatchGuard } from '../engine/engine.ts';
import type { Principal } from '../identity/principal.ts';
import type { ServiceContext } from '../context.ts';
import { AppError } from '../kernel/errors.ts';
import { runConfigFor } from './apply/run-config.ts';
import type { RunService } from '../runs/service.ts';
import type { CreatedRun } from '../engine/engine.ts';
import type { FactoryController } from './controller.ts';
import type { FactoryRow } from './apply/model.ts';
import * as sql from './apply/sql.ts';
import type { AgentConfig, Creator, RunRow } from '../engine/model.ts';
import { authorizeSource } from '../sources/access.ts';
import { looksLikeGitUrl, normalizeSourceSpec } from '../sources/spec.ts';
import { sourceUrlPolicyFor } from '../sources/url-policy.ts';
import type { SourceInput } from '../sources/spec.ts';
import type { SourceSpec } from '../sources/types.ts';
import type { Queryable } from '../kernel/db.ts';
import { isUniqueViolation } from '../store/errors.ts';
import { newId } from '../kernel/ids.ts';
import type { CommitAuthor } from '../sources/managed.ts';
import { FACTORY_NAME_PATTERN } from './schemas.ts';
import { SEED_COMMIT_MESSAGE, seedFiles } from './seed.ts';

const SEED_AUTHOR: CommitAuthor = { name: 'Agentyard', email: 'agentyard@agentyard.invalid' };

const FACTORY_NAME = new RegExp(FACTORY_NAME_PATTERN);

interface Cursor {
  c: string;
  i: string;
}

export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify(c), 'utf8').toString('base64url');
}

export function decodeCursor(text: string): Cursor {
  try {
    const c = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Cursor;
    if (typeof c.c === 'string' && typeof c.i === 'string' && !Number.isNaN(Date.parse(c.c))) return c;
  } catch {
    // fall through
  }
  throw new AppError('invalid_request', 'cursor is not a cursor this endpoint issued');
}

/** What the factory service needs: the kernel context and the reconcile loops it tells of changes. */
export interface FactoryServiceContext extends ServiceContext {
  controller: FactoryController;
  /** Where the runs sent to a factory are created. */
  runs: RunService;
}

/** The run configuration of one agent of a factory's applied definition (its name only, for an unknown agent). */
export function agentRunConfig(factory: FactoryRow, agentName: string): AgentConfig {
  const agent = factory.definition?.agents.find((a) => a.name === agentName);
  const config: AgentConfig = agent ? runConfigFor(agent.execution, agent.name) : { name: agentName };
  if (agent?.prompt) config.base_prompt = agent.prompt;
  return config;
}

/** Factories of a team: creation, lookup, deletion and sending work to them. */
export class FactoryService {
  readonly #ctx: FactoryServiceContext;

  constructor(ctx: FactoryServiceContext) {
    this.#ctx = ctx;
  }

  async create(
    teamId: string,
    input: { name: string; source?: SourceInput | undefined },
    options: { instanceAdmin: boolean; author?: CommitAuthor },
  ): Promise<FactoryRow> {
    if (!FACTORY_NAME.test(input.name))
      throw new AppError(
        'invalid_request',
        `name "${input.name}" must be 1-100 letters, digits, ".", "_" or "-", starting with a letter or digit`,
      );
    const source = normalizeSourceSpec(input.source);
    await authorizeSource(source, options, sourceUrlPolicyFor(this.#ctx.config));
    let row: FactoryRow;
    try {
      row = await sql.insertFactory(this.#ctx.db, { id: newId('fac'), teamId, name: input.name, source });
    } catch (err) {
      if (isUniqueViolation(err))
        throw new AppError('factory_name_taken', `the team already has a factory named "${input.name}"`);
      throw err;
    }
    await this.#announce(row, 'created');
    if (source.type === 'managed') return this.#seed(row, options.author ?? SEED_AUTHOR);
    return row;
  }

  /**
   * Commits and applies the default tree (seed.ts) to a new managed factory. A seed that does not apply leaves
   * the factory created and empty, as its status and apply history then say.
   */
  async #seed(row: FactoryRow, author: CommitAuthor): Promise<FactoryRow> {
    try {
      await this.#ctx.controller.reconciler.applyManagedChange(row.id, () => seedFiles(row.name), {
        author,
        message: SEED_COMMIT_MESSAGE,
      });
    } catch (err) {
      this.#ctx.log.warn({ err, factory_id: row.id }, 'the default files of a new managed factory did not apply');
    }
    return (await sql.getFactory(this.#ctx.db, row.id)) ?? row;
  }

  async #announce(row: FactoryRow, event: 'created' | 'updated' | 'deleted'): Promise<void> {
    const controller = this.#ctx.controller;
    if (event === 'deleted') await controller.forgetFactory(row);
    else await controller.track(row);
    await this.#ctx.bus.publish(FACTORIES_CHANGED_TOPIC, { factory_id: row.id, event });
  }

  /**
   * A factory record written within the caller's transaction, without seeding, source check or announcement:
   * for the operator, whose Factory resource is the source of truth (it tracks and announces after commit).
   */
  insertRecord(
    f: { id: string; teamId: string; name: string; source: SourceSpec },
    options: { within: Queryable },
  ): Promise<FactoryRow> {
    return sql.insertFactory(options.within, f);
  }

  /** Soft-deletes a factory with its webhooks and triggers, within the caller's transaction (the operator). */
  softDelete(teamId: string, id: string, options: { within: Queryable }): Promise<FactoryRow | undefined> {
    return sql.softDeleteFactory(options.within, teamId, id);
  }

  /** Replaces a live factory's source (the operator, from its Factory resource); undefined when it is gone. */
  updateSource(id: string, source: SourceSpec): Promise<FactoryRow | undefined> {
    return sql.updateFactorySource(this.#ctx.db, id, source);
  }

  async get(teamId: string, id: string): Promise<FactoryRow> {
    const row = await sql.getTeamFactory(this.#ctx.db, teamId, id);
    if (!row) throw new AppError('resource_not_found', `factory ${id} does not exist`);
    return row;
  }

  async getByName(teamId: string, name: string): Promise<FactoryRow> {
    const row = await sql.findFactoryByName(this.#ctx.db, teamId, name);
    if (!row) throw new AppError('resource_not_found', `no factory named "${name}"`);
    return row;
  }

  async list(
    teamId: string,
    options: { limit: number; cursor?: string | undefined; search?: string | undefined },
  ): Promise<{ rows: FactoryRow[]; nextCursor: string | undefined }> {
    const after = options.cursor ? decodeCursor(options.cursor) : undefined;
    const rows = await sql.listTeamFactories(this.#ctx.db, teamId, {
      limit: options.limit + 1,
      after: after ? { createdAt: after.c, id: after.i } : undefined,
      search: options.search?.trim() || undefined,
    });
    const page = rows.slice(0, options.limit);
    const last = page[page.length - 1];
    return {
      rows: page,
      nextCursor:
        rows.length > options.limit && last
          ? encodeCursor({ c: last.created_at.toISOString(), i: last.id })
          : undefined,
    };
  }

  /** Deletes the factory; its webhooks answer 404 at once and their delivery history stays. */
  async delete(teamId: string, id: string): Promise<FactoryRow> {
    const row = await this.#ctx.db.transaction(async (tx) => {
      await sql.lockFactory(tx, id);
      return sql.softDeleteFactory(tx, teamId, id);
    });
    if (!row) throw new AppError('resource_not_found', `factory ${id} does not exist`);
    await this.#ctx.bus.publish(WEBHOOKS_CHANGED_TOPIC, { factory_id: id });
    await this.#announce(row, 'deleted');
    return row;
  }

  /**
   * Sends work to the factory: a run of its foreman with the applied definition's settings
   * (agentDefaults → foreman agent: model, harness, workerHost, MCP servers...), overridable per request.
   */
  async createRun(
    principal: Principal,
    id: string,
    input: { prompt: string; title?: string | undefined; config?: Record<string, unknown> | undefined },
  ): Promise<{ run: RunRow; factory: FactoryRow; foreman: string }> {
    const factory = await this.get(principal.teamId, id);
    const definition = factory.definition;
    if (!definition)
      throw new AppError('conflict', `factory ${factory.name} has no applied definition yet (state ${factory.state})`);
    const config: AgentConfig = { ...agentRunConfig(factory, definition.foreman), ...(input.config ?? {}) };
    await authorizeRunSecrets(this.#ctx.db, principal, config, factory.id);
    const { runs } = this.#ctx;
    const { run } = await this.#ctx.db.transaction((tx) =>
      runs.create(
        {
          teamId: principal.teamId,
          prompt: input.prompt,
          title: input.title,
          config,
          source: 'FACTORY',
          factoryId: factory.id,
          creator: {
            id: principal.subject.id,
            type: principal.subject.type,
            displayName: principal.subject.displayName,
            email: principal.subject.email,
          },
        },
        { within: tx },
      ),
    );
    runs.announce([run]);
    return { run, factory, foreman: definition.foreman };
  }

  /**
   * A run of one agent of the factory with the agent's resolved configuration (the factory interface's
   * `dispatch_agent`): a child of `parentRunId` when a run dispatches it. The definition grants the agent's
   * secrets; a person's dispatch is checked against what their key may give a run.
   */
  async createAgentRun(
    teamId: string,
    factoryOrId: string | FactoryRow,
    agent: string,
    input: {
      prompt: string;
      title?: string | undefined;
      parentRunId?: string | undefined;
      /** `parentRunId` was read as a run of this team in this request. */
      parentKnown?: boolean;
      /** The parent's run token, checked by the insert (RunService.create's `dispatchGuard`). */
      dispatchGuard?: DispatchGuard;
      creator: Creator | null;
      principal?: Principal;
      metadata?: Record<string, string>;
    },
  ): Promise<{ run: CreatedRun; factory: FactoryRow }> {
    const factory =
      typeof factoryOrId === 'string' || factoryOrId.team_id !== teamId
        ? await this.get(teamId, typeof factoryOrId === 'string' ? factoryOrId : factoryOrId.id)
        : factoryOrId;
    const definition = factory.definition;
    if (!definition)
      throw new AppError('conflict', `factory ${factory.name} has no applied definition yet (state ${factory.state})`);
    if (!definition.agents.some((a) => a.name === agent))
      throw new AppError(
        'resource_not_found',
        `factory ${factory.name} has no agent "${agent}"; its agents: ${definition.agents.map((a) => a.name).join(', ') || 'none'}`,
      );
    const config = agentRunConfig(factory, agent);
    if (input.principal) await authorizeRunSecrets(this.#ctx.db, input.principal, config, factory.id);
    // a plain run: claimed where it is inserted when this process's executors have a slot (hand-off.ts)
    const { run } = await this.#ctx.runs.create({
      teamId,
      prompt: input.prompt,
      title: input.title,
      config,
      source: input.parentRunId ? 'ORCHESTRATION' : 'FACTORY',
      factoryId: factory.id,
      parentRunId: input.parentRunId ?? null,
      ...(input.parentKnown ? { parentKnown: true } : {}),
      creator: input.creator,
      ...(input.metadata ? { metadata: input.metadata } : {}),
      // the caps of the definition the configuration came from, not read again
      knownCaps: agentRunCaps(factory, agent) ?? null,
      ...(input.dispatchGuard ? { dispatchGuard: input.dispatchGuard } : {}),
    });
    return { run, factory };
  }

  /**
   * `agentyard serve --factory DIR|GIT_URL`: a factory named after the directory (or repository) in the
   * default team, created or re-pointed at start.
   */
  async ensureStartupFactory(target: string): Promise<FactoryRow> {
    const git = looksLikeGitUrl(target);
    const trimmed = target.replace(/\/+$/, '');
    const base = git
      ? trimmed
          .split(/[/:]/)
          .pop()!
          .replace(/\.git$/, '')
      : path.basename(path.resolve(trimmed));
    const name = (base.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '') || 'factory').slice(0, 100);
    const source = normalizeSourceSpec(git ? { type: 'git', url: target } : { type: 'directory', path: target });
    const { db } = this.#ctx;
    const teamId = await sql.startupTeamId(db);
    if (!teamId) throw new Error('no team exists to hold the factory');
    const existing = await sql.findFactoryByName(db, teamId, name);
    if (existing) {
      if (JSON.stringify(existing.source) === JSON.stringify(source)) return existing;
      const updated = (await sql.updateFactorySource(db, existing.id, source))!;
      await this.#announce(updated, 'updated');
      return updated;
    }
    return this.create(
      teamId,
      { name, source: git ? { type: 'git', url: target } : { type: 'directory', path: target } },
      { instanceAdmin: true },
    );
  }
}
