/**
 * The factory interface's operations (docs/orchestration.md), for the MCP tools of /api/v1/mcp/factory. A caller
 * is a run (its run token: its team, factory and tree) or a person (a team API key: the schema and validate
 * tools, `list_agents`, and `dispatch_agent` with no parent run). A refusal is a `ToolRefusal` whose sentence
 * says why; the MCP layer answers it as a tool error.
 */
import { RUN_EVENTS_TOPIC } from '../kernel/topics.ts';
import type { Bus } from '../kernel/bus.ts';
import type { Db } from '../kernel/db.ts';
import { isAppError } from '../kernel/errors.ts';
import { newId } from '../kernel/ids.ts';
import type { Logger } from '../kernel/log.ts';
import type { Principal } from '../identity/principal.ts';
import type { FactoryRow } from '../factories/apply/model.ts';
import type { FactoryService } from '../factories/service.ts';
import { validateFactoryFiles } from '../factories/validation.ts';
import { DEPLOYMENT_NOTES } from '../factories/apply/deployment-notes.ts';
import type { DefinitionPool } from '../definitions/pool.ts';
import { getSchemaBundle, SCHEMA_VERSION } from '../definitions/schemas.ts';
import type { RunRow } from '../engine/model.ts';
import type { RunService } from '../runs/service.ts';
import { getRun, lastResultText, runStates } from '../runs/sql.ts';
import { isTerminal } from '../engine/state-machine.ts';
import {
  announceResumed,
  dispatchRefusal,
  inTree,
  linkThread,
  refusalOf,
  recordEvents,
  recordQuestion,
  resumeWithFollowup,
  takeReports,
  treePosition,
} from '../runs/tree.ts';
import type { TreeLimits } from '../runs/tree.ts';
import type { RunTokenHolder } from '../execution/run-token.ts';
import { verifyRunTokenHash } from '../execution/run-token.ts';
import { DispatchGuardFailed } from '../runs/service.ts';
import { isUrlSafe } from '../secrets/provider.ts';
import type { SecretProvider } from '../secrets/provider.ts';
import { describeOrigin, originOf, originThreadKey, PostFailed, postAtOrigin } from './origin.ts';
import type { Origin } from './origin.ts';
import { findSkill } from './skills.ts';

export type FactoryCaller =
  | {
      kind: 'run';
      teamId: string;
      runId: string;
      executionId: string;
      factoryId: string | null;
      /** The run as the request found it (its token checked against it). */
      run?: RunRow;
      /** Read with the token when the request dispatches: the tree and limit facts, the factory's version. */
      dispatch?: RunTokenHolder['dispatch'];
      /**
       * The token was not checked in this request (its holder's fixed facts came from token-cache.ts): a dispatch
       * has the insert check it (`dispatchGuard`), and checks it again before answering anything else.
       */
      guard?: { tokenHash: string };
      /** Set when that check found the token dead: the request answers 401. */
      revoked?: boolean;
    }
  | { kind: 'key'; principal: Principal };

/** A tool call refused: the sentence says why (the MCP answer is `isError: true` with it). */
export class ToolRefusal extends Error {}

export interface FactoryInterfaceDeps {
  db: Db;
  bus: Bus;
  log: Logger;
  secrets: SecretProvider;
  factories: FactoryService;
  runs: RunService;
  definitions: DefinitionPool;
  models: { ids: ReadonlySet<string>; closed: boolean };
  limits: TreeLimits;
  now?: () => Date;
}

/** Longest `wait_for_runs` waits in one call. */
export const MAX_WAIT_SECONDS = 300;
/** Runs one `wait_for_runs` call may name. */
export const MAX_WAIT_RUNS = 50;

export interface RunView {
  run_id: string;
  agent: string | null;
  title: string;
  state: string;
  status_message: string | null;
  parent_run_id: string | null;
  result: string | null;
  artifacts: unknown[];
}

export class FactoryInterface {
  readonly #deps: FactoryInterfaceDeps;
  /** Factory rows by id, as `#currentFactory` last read them. */
  readonly #factoryRows = new Map<string, FactoryRow>();
  #waiting = 0;

  constructor(deps: FactoryInterfaceDeps) {
    this.#deps = deps;
  }

  #teamOf(caller: FactoryCaller): string {
    return caller.kind === 'run' ? caller.teamId : caller.principal.teamId;
  }

  #runOnly(caller: FactoryCaller, tool: string): Extract<FactoryCaller, { kind: 'run' }> {
    if (caller.kind !== 'run')
      throw new ToolRefusal(`${tool} is for runs: call it with the run token an execution is given, not an API key`);
    return caller;
  }

  /** The factory a call is about: the caller run's own, or (an API key) the one named, or the team's only one. */
  async #factoryOf(caller: FactoryCaller, named: string | undefined): Promise<FactoryRow> {
    const { factories } = this.#deps;
    if (caller.kind === 'run') {
      if (!caller.factoryId) throw new ToolRefusal('this run belongs to no factory, so it has no agents to work with');
      if (named) {
        const own = await factories.get(caller.teamId, caller.factoryId);
        if (named !== own.id && named !== own.name)
          throw new ToolRefusal(`a run works only with its own factory (${own.name}), not "${named}"`);
        return own;
      }
      return factories.get(caller.teamId, caller.factoryId);
    }
    const teamId = caller.principal.teamId;
    if (named) {
      try {
        return named.startsWith('fac_') ? await factories.get(teamId, named) : await factories.getByName(teamId, named);
      } catch (err) {
        if (isAppError(err)) throw new ToolRefusal(`the team has no factory "${named}"`);
        throw err;
      }
    }
    const { rows } = await factories.list(teamId, { limit: 2 });
    if (rows.length === 1) return rows[0]!;
    throw new ToolRefusal(
      rows.length === 0 ? 'the team has no factory' : 'the team has several factories: name one in "factory"',
    );
  }

  /**
   * A run's factory as of `updatedAt` (its `updated_at`, read with the run token): kept per process, read again
   * when it has changed since. A deleted factory (null) is read as before, which answers why.
   */
  async #currentFactory(teamId: string, factoryId: string, updatedAt: Date | null): Promise<FactoryRow> {
    const cached = this.#factoryRows.get(factoryId);
    if (updatedAt && cached && cached.team_id === teamId && cached.updated_at.getTime() === updatedAt.getTime())
      return cached;
    const row = await this.#deps.factories.get(teamId, factoryId);
    if (this.#factoryRows.size >= 1_000) this.#factoryRows.clear();
    this.#factoryRows.set(factoryId, row);
    return row;
  }

  async listAgents(
    caller: FactoryCaller,
    factoryName?: string,
  ): Promise<{
    factory: string;
    foreman: string | null;
    agents: { name: string; description: string | null; type: string }[];
  }> {
    const factory = await this.#factoryOf(caller, factoryName);
    const definition = factory.definition;
    if (!definition) throw new ToolRefusal(`factory ${factory.name} has no applied definition yet`);
    return {
      factory: factory.name,
      foreman: definition.foreman ?? null,
      agents: definition.agents.map((a) => ({ name: a.name, description: a.description, type: a.agentType })),
    };
  }

  async dispatch(
    caller: FactoryCaller,
    input: { agent: string; prompt: string; title?: string | undefined; factory?: string | undefined },
  ): Promise<{ run_id: string; state: string; agent: string; parent_run_id: string | null }> {
    if (caller.kind !== 'run' || !caller.guard) return this.#dispatch(caller, input);
    try {
      return await this.#dispatch(caller, input);
    } catch (err) {
      // Whatever went wrong without the token's own check (the insert refused it, the factory changed, a limit,
      // an unknown agent) is answered only after that check, with the facts as they are now.
      const holder = await verifyRunTokenHash(this.#deps.db, caller.guard.tokenHash, { forDispatch: true });
      if (!holder) {
        caller.revoked = true;
        throw new ToolRefusal('the run token is unknown, or its execution is no longer running');
      }
      if (!(err instanceof DispatchGuardFailed) && !(err instanceof ToolRefusal)) throw err;
      return this.#dispatch({ kind: 'run', ...holder }, input);
    }
  }

  async #dispatch(
    caller: FactoryCaller,
    input: { agent: string; prompt: string; title?: string | undefined; factory?: string | undefined },
  ): Promise<{ run_id: string; state: string; agent: string; parent_run_id: string | null }> {
    const { db, limits } = this.#deps;
    // an unchecked token dispatches only where its insert checks it
    if (
      caller.kind === 'run' &&
      caller.guard &&
      !(caller.dispatch?.factoryUpdatedAt && caller.run && caller.factoryId && !input.factory)
    )
      throw new DispatchGuardFailed('this dispatch needs the run token checked first');
    if (!input.prompt.trim()) throw new ToolRefusal('prompt must not be empty');
    const teamId = this.#teamOf(caller);
    const now = this.#now();
    const refusalAt = (factoryId: string) =>
      dispatchRefusal(db, { parentId: caller.kind === 'run' ? caller.runId : null, factoryId, now }, limits);
    let factory: FactoryRow;
    let parent: RunRow | undefined;
    let refusal: string | undefined;
    if (caller.kind === 'run' && caller.dispatch && caller.run && caller.factoryId && !input.factory) {
      // The token's statement read the parent, its tree, the limits and the factory's version: nothing more to read
      // unless the factory changed since this process last read it.
      factory = await this.#currentFactory(caller.teamId, caller.factoryId, caller.dispatch.factoryUpdatedAt);
      parent = caller.run;
      refusal = refusalOf(caller.dispatch.facts, { parentId: caller.runId, now }, limits);
    } else {
      // A run's factory is known: its limits are read while the factory is (PostgreSQL runs them side by side).
      const early =
        caller.kind === 'run' && caller.factoryId && !input.factory ? refusalAt(caller.factoryId) : undefined;
      early?.catch(() => {});
      factory = await this.#factoryOf(caller, input.factory);
      [parent, refusal] = await Promise.all([
        caller.kind === 'run' ? (caller.run ?? getRun(db, teamId, caller.runId)) : undefined,
        early ?? refusalAt(factory.id),
      ]);
    }
    if (!factory.definition?.agents.some((a) => a.name === input.agent)) {
      const names = factory.definition?.agents.map((a) => a.name).join(', ') || 'none';
      throw new ToolRefusal(`factory ${factory.name} has no agent "${input.agent}"; its agents: ${names}`);
    }
    if (caller.kind === 'run' && !parent) throw new ToolRefusal('the calling run no longer exists');
    if (refusal) throw new ToolRefusal(refusal);
    const creator = parent
      ? parent.creator_id && parent.creator_type
        ? {
            id: parent.creator_id,
            type: parent.creator_type,
            displayName: parent.creator_name ?? parent.creator_id,
            email: parent.creator_email,
          }
        : null
      : caller.kind === 'key'
        ? {
            id: caller.principal.subject.id,
            type: caller.principal.subject.type,
            displayName: caller.principal.subject.displayName,
            email: caller.principal.subject.email,
          }
        : null;
    try {
      const { run } = await this.#deps.factories.createAgentRun(teamId, factory, input.agent, {
        prompt: input.prompt,
        title: input.title,
        parentRunId: parent?.id,
        // the parent is the caller's own run, read with its token
        ...(parent ? { parentKnown: true } : {}),
        creator,
        ...(caller.kind === 'key' ? { principal: caller.principal } : {}),
        // a child answers in its parent's conversation: the chat it came from, inherited
        ...(parent ? { metadata: parent.metadata } : {}),
        ...(caller.kind === 'run' && caller.guard && caller.dispatch?.factoryUpdatedAt
          ? {
              dispatchGuard: {
                tokenHash: caller.guard.tokenHash,
                maxChildren: limits.maxChildren,
                maxActive: limits.maxActivePerFactory,
                factoryUpdatedAt: caller.dispatch.factoryUpdatedAt,
              },
            }
          : {}),
      });
      return { run_id: run.id, state: run.state, agent: input.agent, parent_run_id: parent?.id ?? null };
    } catch (err) {
      if (isAppError(err)) throw new ToolRefusal(err.message);
      throw err;
    }
  }

  /** A run of the caller's tree (its root, or any run below it). */
  async #treeRun(caller: Extract<FactoryCaller, { kind: 'run' }>, runId: string): Promise<RunRow> {
    const { db } = this.#deps;
    const run = await getRun(db, caller.teamId, runId);
    const root = (await treePosition(db, caller.runId)).rootId;
    if (!run || !(await inTree(db, root, runId)))
      throw new ToolRefusal(`run ${runId} is not in this run's tree (only the runs of one tree can see each other)`);
    return run;
  }

  async followup(
    caller: FactoryCaller,
    runId: string,
    message: string,
  ): Promise<{ run_id: string; state: string; followup_id: string }> {
    const self = this.#runOnly(caller, 'send_followup');
    if (!message.trim()) throw new ToolRefusal('message must not be empty');
    if (runId === self.runId) throw new ToolRefusal('a run cannot send a follow-up to itself');
    await this.#treeRun(self, runId);
    const { followupId, run } = await this.#deps.runs.followup(self.teamId, runId, {
      message,
      mode: 'normal',
      creatorId: null,
    });
    return { run_id: runId, state: run.state, followup_id: followupId };
  }

  async #view(run: RunRow): Promise<RunView> {
    return {
      run_id: run.id,
      agent: typeof run.config.name === 'string' ? run.config.name : null,
      title: run.title,
      state: run.state,
      status_message: run.status_message?.message ?? null,
      parent_run_id: run.parent_run_id,
      result: (await lastResultText(this.#deps.db, run.id)) ?? null,
      artifacts: run.artifacts,
    };
  }

  /** Reports of `childIds` waiting for the caller, handed over in this answer (so they do not continue it later). */
  async #reports(caller: Extract<FactoryCaller, { kind: 'run' }>, childIds: readonly string[]) {
    const taken = await takeReports(this.#deps.db, caller.runId, childIds, caller.executionId);
    if (taken.length) {
      await recordEvents(
        this.#deps.db,
        caller.runId,
        caller.executionId,
        taken.map((f) => ({
          type: 'followup' as const,
          data: { followup_id: f.id, message: f.message, delivery: 'tool' },
        })),
      );
      await this.#deps.bus.publish(RUN_EVENTS_TOPIC, { run_ids: [caller.runId] });
    }
    return taken.map((f) => ({ from_run_id: f.provider_message_key.split(':')[1] ?? null, text: f.message }));
  }

  async getRun(
    caller: FactoryCaller,
    runId: string,
  ): Promise<RunView & { reports: { from_run_id: string | null; text: string }[] }> {
    const self = this.#runOnly(caller, 'get_run');
    const run = await this.#treeRun(self, runId);
    return { ...(await this.#view(run)), reports: await this.#reports(self, [runId]) };
  }

  /** `wait_for_runs` calls of this process still waiting (a call whose client went away is released at once). */
  get waiting(): number {
    return this.#waiting;
  }

  async waitForRuns(
    caller: FactoryCaller,
    runIds: readonly string[],
    timeoutSeconds: number,
    signal: AbortSignal | undefined,
  ): Promise<{ all_ended: boolean; runs: RunView[]; reports: { from_run_id: string | null; text: string }[] }> {
    const self = this.#runOnly(caller, 'wait_for_runs');
    const ids = [...new Set(runIds)];
    if (ids.length === 0) throw new ToolRefusal('run_ids must name at least one run');
    if (ids.length > MAX_WAIT_RUNS) throw new ToolRefusal(`run_ids names more than ${MAX_WAIT_RUNS} runs`);
    this.#waiting++;
    try {
      for (const id of ids) await this.#treeRun(self, id);
      const wait = Math.min(Math.max(0, timeoutSeconds), MAX_WAIT_SECONDS) * 1000;
      const deadline = Date.now() + wait;
      const ended = async () => {
        const states = await runStates(this.#deps.db, self.teamId, ids);
        return states.length === ids.length && states.every((r) => isTerminal(r.state));
      };
      let allEnded = await ended();
      while (!allEnded && Date.now() < deadline && !signal?.aborted) {
        await this.#nextChange(ids, Math.min(1000, deadline - Date.now()), signal);
        if (signal?.aborted) break;
        allEnded = await ended();
      }
      // The client went away: nobody reads this answer, so the reports stay for the caller's next call (or its
      // next execution) instead of being handed over here.
      if (signal?.aborted) throw new ToolRefusal('the client closed the request before the runs ended');
      const runs: RunView[] = [];
      for (const id of ids) runs.push(await this.#view((await getRun(this.#deps.db, self.teamId, id))!));
      return { all_ended: allEnded, runs, reports: await this.#reports(self, ids) };
    } finally {
      this.#waiting--;
    }
  }

  /** Resolves at the next event of one of `ids` (bus), after `ms`, or on abort. */
  #nextChange(ids: readonly string[], ms: number, signal: AbortSignal | undefined): Promise<void> {
    const watched = new Set(ids);
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        unsubscribe();
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      const unsubscribe = this.#deps.bus.subscribe(RUN_EVENTS_TOPIC, (data) => {
        const runIds = (data as { run_ids?: string[] } | null)?.run_ids ?? [];
        if (runIds.some((id) => watched.has(id))) done();
      });
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  async report(caller: FactoryCaller, text: string): Promise<{ delivered_to: string; followup_id: string }> {
    const self = this.#runOnly(caller, 'report');
    if (!text.trim()) throw new ToolRefusal('text must not be empty');
    const { db, bus } = this.#deps;
    const run = await getRun(db, self.teamId, self.runId);
    if (!run?.parent_run_id)
      throw new ToolRefusal('this run has no parent to report to (a root run answers with reply or its result)');
    const parentId = run.parent_run_id;
    const agent = typeof run.config.name === 'string' ? run.config.name : 'a child run';
    const message = `Report from ${agent} (run ${run.id}):\n\n${text}`;
    const resumed = await db.transaction(async (tx) => {
      const r = await resumeWithFollowup(tx, {
        teamId: self.teamId,
        runId: parentId,
        message,
        creatorId: null,
        providerMessageKey: `report:${run.id}:${newId('fu')}`,
      });
      if (!r) throw new ToolRefusal(`the parent run ${parentId} no longer exists`);
      await recordEvents(tx, run.id, self.executionId, [{ type: 'report', data: { to_run_id: parentId, text } }]);
      await recordEvents(tx, parentId, null, [
        { type: 'report', data: { from_run_id: run.id, agent, text, followup_id: r.followupId } },
      ]);
      return r;
    });
    await announceResumed(bus, [resumed]);
    await bus.publish(RUN_EVENTS_TOPIC, { run_ids: [run.id, parentId] });
    return { delivered_to: parentId, followup_id: resumed.followupId };
  }

  /** The chat the caller's run came from: its own, else its tree's root's. */
  async #origin(self: Extract<FactoryCaller, { kind: 'run' }>): Promise<{ run: RunRow; origin: Origin }> {
    const { db } = this.#deps;
    const run = await getRun(db, self.teamId, self.runId);
    if (!run) throw new ToolRefusal('the calling run no longer exists');
    let origin = originOf(run.metadata);
    if (origin.provider === 'console' && run.parent_run_id) {
      const rootId = (await treePosition(db, run.id)).rootId;
      const root = await getRun(db, self.teamId, rootId);
      if (root) origin = originOf(root.metadata);
    }
    return { run, origin };
  }

  async #post(self: Extract<FactoryCaller, { kind: 'run' }>, text: string, kind: 'reply' | 'question') {
    const { run, origin } = await this.#origin(self);
    let receipt: Record<string, string>;
    try {
      receipt = await postAtOrigin(this.#deps.db, this.#deps.secrets, self.teamId, origin, text, kind);
    } catch (err) {
      if (err instanceof PostFailed) throw new ToolRefusal(`the ${kind} could not be posted: ${err.message}`);
      throw err;
    }
    return { run, origin, postedTo: { ...describeOrigin(origin), ...receipt } };
  }

  async #linkOrigin(run: RunRow, origin: Origin): Promise<void> {
    const key = originThreadKey(origin);
    if (key && origin.provider !== 'console')
      await linkThread(this.#deps.db, {
        connectionId: origin.connectionId,
        threadKey: key,
        runId: run.id,
        teamId: run.team_id,
        provider: origin.provider,
      });
  }

  async askUser(caller: FactoryCaller, question: string): Promise<{ posted_to: Record<string, string>; note: string }> {
    const self = this.#runOnly(caller, 'ask_user');
    if (!question.trim()) throw new ToolRefusal('question must not be empty');
    const { run, origin, postedTo } = await this.#post(self, question, 'question');
    await this.#linkOrigin(run, origin);
    await recordQuestion(this.#deps.db, {
      runId: run.id,
      executionId: self.executionId,
      teamId: self.teamId,
      question,
      postedTo,
    });
    await recordEvents(this.#deps.db, run.id, self.executionId, [
      { type: 'question', data: { question, posted_to: postedTo } },
    ]);
    await this.#deps.bus.publish(RUN_EVENTS_TOPIC, { run_ids: [run.id] });
    return {
      posted_to: postedTo,
      note: 'Posted. End your turn now: when this execution ends the run waits as BLOCKED, and the answer (a reply there, or a follow-up through the API or the console) resumes it.',
    };
  }

  async reply(caller: FactoryCaller, text: string): Promise<{ posted_to: Record<string, string> }> {
    const self = this.#runOnly(caller, 'reply');
    if (!text.trim()) throw new ToolRefusal('text must not be empty');
    const { run, origin, postedTo } = await this.#post(self, text, 'reply');
    await this.#linkOrigin(run, origin);
    await recordEvents(this.#deps.db, run.id, self.executionId, [
      { type: 'reply', data: { text, posted_to: postedTo } },
    ]);
    await this.#deps.bus.publish(RUN_EVENTS_TOPIC, { run_ids: [run.id] });
    return { posted_to: postedTo };
  }

  schema(document: string | undefined): { schema_version: string; documents: Record<string, unknown> } {
    const bundle = getSchemaBundle();
    if (!document) return { schema_version: SCHEMA_VERSION, documents: bundle };
    const name = `${document.replace(/\.schema\.json$/, '').replace(/\.json$/, '')}.schema.json`;
    if (!(name in bundle))
      throw new ToolRefusal(`no schema document "${document}"; documents: ${Object.keys(bundle).sort().join(', ')}`);
    return { schema_version: SCHEMA_VERSION, documents: { [name]: bundle[name] } };
  }

  async validate(caller: FactoryCaller, files: { path: string; content: string }[]) {
    const teamId = this.#teamOf(caller);
    const { secrets } = this.#deps;
    try {
      return await validateFactoryFiles(this.#deps.definitions, Buffer.from(JSON.stringify({ files })), {
        secretExists: async (name) => (await secrets.get(teamId, name)) !== undefined,
        secretIsUrlSafe: async (name) => {
          const value = await secrets.get(teamId, name);
          return value !== undefined && isUrlSafe(value);
        },
        models: this.#deps.models,
        deploymentNotes: DEPLOYMENT_NOTES,
        teamChecked: true,
      });
    } catch (err) {
      if (isAppError(err)) throw new ToolRefusal(err.message);
      throw err;
    }
  }

  /** A skill's text: the factory's own (`skill` as the run's skill specs name it), or a bundled one by its id. */
  async readSkill(caller: FactoryCaller, skill: string): Promise<{ skill: string; source: string; text: string }> {
    let factories: FactoryRow[] = [];
    let agent: string | null = null;
    if (caller.kind === 'run') {
      if (caller.factoryId) factories = [await this.#deps.factories.get(caller.teamId, caller.factoryId)];
      const run = await getRun(this.#deps.db, caller.teamId, caller.runId);
      agent = typeof run?.config.name === 'string' ? run.config.name : null;
    } else {
      factories = (await this.#deps.factories.list(caller.principal.teamId, { limit: 100 })).rows;
    }
    const found = findSkill(factories, skill, agent);
    if (!found) throw new ToolRefusal(`no skill "${skill}" in the factory's files or among the bundled skills`);
    if (caller.kind === 'run') {
      await recordEvents(this.#deps.db, caller.runId, caller.executionId, [
        {
          type: 'skill',
          data:
            found.kind === 'bundled'
              ? { name: found.name, bundled_skill_id: found.name, resolved: true, source: 'bundled' }
              : { spec: skill, name: found.name, resolved: true, skill_path: found.path, source: found.source },
        },
      ]);
      await this.#deps.bus.publish(RUN_EVENTS_TOPIC, { run_ids: [caller.runId] });
    }
    return { skill: found.name, source: found.source, text: found.text };
  }

  #now(): Date {
    return this.#deps.now?.() ?? new Date();
  }
}
