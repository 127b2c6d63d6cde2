import { DEPLOYMENT_NOTES } from './deployment-notes.ts';
import { FACTORIES_CHANGED_TOPIC } from '../../kernel/topics.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../../kernel/log.ts';
import { uniqueDiagnostics } from '../../definitions/diagnostic.ts';
import { teamNameResolver } from '../../integrations/name-resolver.ts';
import { withKeptIntegrations } from './integrations-kept.ts';
import { announceLiveChange } from '../live-state.ts';
import type { LiveRoutes } from '../live-state.ts';
import type { FactoryDefinition } from '../../definitions/model.ts';
import { reindexProviderTriggers } from './provider-trigger-index.ts';
import type { Diagnostic } from '../../definitions/diagnostic.ts';
import type { FactoryFileInput } from '../../definitions/load.ts';
import type { DefinitionPool, PoolContext } from '../../definitions/pool.ts';
import type { ValidationResult } from '../../definitions/validate.ts';
import { AppError } from '../../kernel/errors.ts';
import type { Cipher } from '../../kernel/caller.ts';
import { isUrlSafe } from '../../secrets/provider.ts';
import type { SecretProvider } from '../../secrets/provider.ts';
import { capDiagnostics } from '../../sources/limits.ts';
import type { SourceLimits } from '../../sources/limits.ts';
import { createSource, sanitizeUrl } from '../../sources/index.ts';
import type { SourceUrlPolicy } from '../../sources/url-policy.ts';
import type { ManagedRepository } from '../../sources/managed.ts';
import type { CommitAuthor } from '../../sources/managed.ts';
import { managedHeadSha } from '../../sources/sql.ts';
import { SerialQueue } from '../../kernel/loop.ts';
import { isSourceError } from '../../sources/types.ts';
import type { Source, SourceSnapshot } from '../../sources/types.ts';
import type { Bus } from '../../kernel/bus.ts';
import type { Db, Queryable } from '../../kernel/db.ts';
import { newId } from '../../kernel/ids.ts';
import {
  appliedMessage,
  applyFailedMessage,
  deletionBlockedMessage,
  fetchFailedMessage,
  validationFailedMessage,
} from './messages.ts';
import type { ApplyOutcome, ApplyTrigger, FactoryRow, RevisionReason, SourceFailure } from './model.ts';
import { computePlan } from './plan.ts';
import type { Plan } from './plan.ts';
import * as sql from './sql.ts';

export interface ReconcilerDeps {
  db: Db;
  bus: Bus;
  cipher: Cipher;
  /** Where secret values come from (the database, or Kubernetes Secrets under the operator). */
  secrets: SecretProvider;
  log: Logger;
  dataDir: string;
  /** Where trees are parsed and validated (worker threads with budgets). */
  definitions: DefinitionPool;
  /** Hosts git sources may reach, checked before every fetch; any when absent. */
  urlPolicy?: SourceUrlPolicy;
  /** What a git or directory source may hold; the defaults when absent. */
  sourceLimits?: SourceLimits;
  /** The deployment's model catalogue; absent: model ids are not checked. */
  models?: { ids: ReadonlySet<string>; closed: boolean };
  /**
   * This process's ingress routes (with the `ingress` role): an apply that changed live webhooks or automations
   * answers once they are reloaded, so that whoever asked for it finds the routes in force.
   */
  routing?: LiveRoutes | undefined;
}

export interface ReconcileOptions {
  trigger: ApplyTrigger;
  /**
   * A person or a push asked for it: retry a refused revision, record an `unchanged` entry for the applied
   * one, and consent to an apply that deletes every webhook and automation.
   */
  explicit: boolean;
}

/** What validation plus diffing found for a tree, without writing anything. */
export interface Prepared {
  validation: ValidationResult;
  plan: Plan | undefined;
  /** The live-state generation the plan was computed against. */
  generation: number;
}

/** Thrown when the factory disappeared (deleted) while a reconcile was running. */
export class FactoryGoneError extends Error {
  constructor(id: string) {
    super(`factory ${id} does not exist`);
    this.name = 'FactoryGoneError';
  }
}

type Decision = 'skip' | 'unchanged' | 'apply';

/** What a reconcile decided for a revision, written by `#finalize`. */
type Verdict =
  | {
      result: 'applied';
      definition: FactoryDefinition;
      liveChanged: boolean;
      /** The validation's warnings (the status keeps them as `errors` of severity warning). */
      errors: Diagnostic[];
      warnings: ApplyOutcome['warnings'];
      changes: ApplyOutcome['changes'];
    }
  | { result: 'unchanged' }
  | {
      result: 'failed';
      reason: RevisionReason;
      message: string;
      errors: Diagnostic[];
      warnings: ApplyOutcome['warnings'];
      changes: ApplyOutcome['changes'];
    };

/** Reasons that mean "this revision needs a new commit or a person": retried only on an explicit sync. */
const REFUSED: ReadonlySet<string> = new Set<RevisionReason>(['ValidationFailed', 'DeletionBlocked']);

function decide(factory: FactoryRow, revision: string, explicit: boolean): Decision {
  if (revision === factory.applied_revision) {
    if (!explicit && factory.attempted_revision === revision && factory.state === 'applied') return 'skip';
    return 'unchanged';
  }
  if (
    !explicit &&
    revision === factory.attempted_revision &&
    factory.state === 'failed' &&
    REFUSED.has(factory.reason ?? '')
  )
    return 'skip';
  return 'apply';
}

const AUTOMATIC: ReadonlySet<ApplyTrigger> = new Set(['poll', 'watch', 'start']);
const MAX_PLAN_ATTEMPTS = 5;
/**
 * Managed writes that lost the head to another process's commit start again this many times at most, after a
 * random pause that grows with each attempt (so that two busy processes stop colliding).
 */
const MAX_MANAGED_ATTEMPTS = 20;
const MANAGED_RETRY_PAUSE_MS = 10;

function outcome(factoryId: string, partial: Partial<ApplyOutcome> & Pick<ApplyOutcome, 'result'>): ApplyOutcome {
  return {
    factoryId,
    revision: null,
    reason: null,
    message: null,
    errors: [],
    warnings: [],
    changes: [],
    applyId: null,
    transient: false,
    ...partial,
  };
}

function warningDiagnostics(validation: ValidationResult): Diagnostic[] {
  return validation.diagnostics.filter((d) => d.severity !== 'error');
}

/**
 * The reconcile loop of one factory revision: fetch → load → validate → plan → apply in one transaction
 * under a per-factory advisory lock → record → publish. A refused revision changes nothing live.
 */
export class Reconciler {
  readonly #deps: ReconcilerDeps;
  readonly #sources = new Map<string, { key: string; source: Source }>();
  readonly #managedQueues = new Map<string, SerialQueue>();

  readonly #validator: DefinitionPool;

  constructor(deps: ReconcilerDeps) {
    this.#deps = deps;
    this.#validator = deps.definitions;
  }

  get secrets(): SecretProvider {
    return this.#deps.secrets;
  }

  /** The source of a factory, kept between reconciles (a git source keeps its local copy warm). */
  sourceFor(factory: FactoryRow): Source {
    const key = JSON.stringify(factory.source);
    const cached = this.#sources.get(factory.id);
    if (cached && cached.key === key) return cached.source;
    const source = createSource(factory, {
      dataDir: this.#deps.dataDir,
      secrets: this.#deps.secrets,
      db: this.#deps.db,
      urlPolicy: this.#deps.urlPolicy,
      limits: this.#deps.sourceLimits,
    });
    this.#sources.set(factory.id, { key, source });
    return source;
  }

  forget(factoryId: string): void {
    this.#sources.delete(factoryId);
    this.#managedQueues.delete(factoryId);
  }

  /** Fetches the factory's source and reconciles its newest revision. */
  async reconcile(factoryId: string, options: ReconcileOptions, overtakenAgain = 0): Promise<ApplyOutcome> {
    const factory = await sql.getFactory(this.#deps.db, factoryId);
    if (!factory) throw new FactoryGoneError(factoryId);
    const source = this.sourceFor(factory);
    let snapshot: SourceSnapshot | undefined;
    try {
      snapshot = await source.fetch();
    } catch (err) {
      const failure: SourceFailure = isSourceError(err)
        ? { reason: err.reason, kind: err.kind, message: err.message, at: new Date().toISOString() }
        : {
            reason: 'FetchFailed',
            kind: 'transient',
            message: fetchFailedMessage(source.describe(), err),
            at: new Date().toISOString(),
          };
      const changed = factory.source_error?.message !== failure.message;
      await sql.recordSourceFailure(this.#deps.db, factoryId, failure);
      if (changed) {
        this.#deps.log.warn({ factory_id: factoryId, reason: failure.reason }, failure.message);
        await this.#deps.bus.publish(FACTORIES_CHANGED_TOPIC, {
          factory_id: factoryId,
          event: 'reconciled',
          result: 'failed',
        });
      }
      return outcome(factoryId, {
        result: 'failed',
        reason: failure.reason,
        message: failure.message,
        transient: failure.kind === 'transient',
      });
    }
    // A successful fetch clears a source error and moves `fetched_at`, the time of the last good fetch.
    await sql.recordSourceFailure(this.#deps.db, factoryId, null);
    if (!snapshot) return outcome(factoryId, { result: 'none', message: `${source.describe()} has no revision yet` });
    const result = await this.#reconcileSnapshot(factory, snapshot, options);
    if (!('overtaken' in result)) return result;
    // Another process handled a newer fetch meanwhile: the head is fetched again rather than this one applied.
    if (overtakenAgain >= MAX_PLAN_ATTEMPTS) return result.outcome;
    return this.reconcile(factoryId, options, overtakenAgain + 1);
  }

  /**
   * Validates a tree against the factory's live state and diffs it, without writing. `forApply` assigns
   * UIDs to new webhooks; a dry run (`plan`) shows them as null.
   */
  async prepare(
    factory: FactoryRow,
    files: readonly FactoryFileInput[],
    options: { forApply: boolean; refreshSecrets: boolean },
  ): Promise<Prepared> {
    const db = this.#deps.db;
    const generation = factory.generation;
    const webhooks = await sql.listFactoryWebhooks(db, factory.id, { includeDeleted: true });
    const automations = await sql.listFactoryAutomations(db, factory.id);
    const values = new Map<string, Promise<string | undefined>>();
    const secret = (name: string): Promise<string | undefined> => {
      let value = values.get(name);
      if (!value) {
        value = this.#deps.secrets.get(factory.team_id, name);
        values.set(name, value);
      }
      return value;
    };
    const context: PoolContext = {
      secretExists: async (name) => (await secret(name)) !== undefined,
      secretIsUrlSafe: async (name) => {
        const value = await secret(name);
        return value !== undefined && isUrlSafe(value);
      },
      // Deleted webhooks count: a trigger naming one is valid and never fires (the plan warns).
      knownWebhookUids: new Set(webhooks.map((w) => w.uid)),
      // This service has no team runners: a runner must be a runners/ file.
      teamRunners: new Set(),
      ...(this.#deps.models ? { models: this.#deps.models } : {}),
      deploymentNotes: DEPLOYMENT_NOTES,
      // Connections and name look-ups need the database and the providers' APIs: the pool's worker asks them
      // of this thread, so that the tree is validated once, with everything the apply knows.
      ...teamNameResolver(db, this.#deps.secrets, factory.team_id),
    };
    const validation = await this.#validator.validate(files, context);
    if (!validation.valid || !validation.definition) return { validation, plan: undefined, generation };
    const secrets = new Map<string, string>();
    for (const hook of validation.definition.webhooks) {
      const value = await secret(hook.secretName);
      if (value !== undefined) secrets.set(hook.secretName, value);
    }
    const plan = computePlan({
      definition: validation.definition,
      files,
      webhooks,
      automations,
      applied: factory.definition,
      secrets,
      refreshSecrets: options.refreshSecrets,
      decrypt: (sealed) => this.#deps.cipher.decrypt(sealed),
      ...(options.forApply ? { newUid: () => newId('wh'), newAutomationId: () => newId('auto') } : {}),
    });
    return { validation, plan, generation };
  }

  /** Reconciles a given revision (fetched, or just committed to a managed repository). */
  async reconcileSnapshot(
    initial: FactoryRow,
    snapshot: SourceSnapshot,
    options: ReconcileOptions,
    prepared?: Prepared,
  ): Promise<ApplyOutcome> {
    const result = await this.#reconcileSnapshot(initial, snapshot, options, prepared);
    return 'overtaken' in result ? result.outcome : result;
  }

  /**
   * Answers `overtaken` when, while this revision was being prepared, another process applied or refused a
   * different one: this snapshot may be older than that, and applying it would take the factory back.
   */
  async #reconcileSnapshot(
    initial: FactoryRow,
    snapshot: SourceSnapshot,
    options: ReconcileOptions,
    prepared?: Prepared,
  ): Promise<ApplyOutcome | { overtaken: true; outcome: ApplyOutcome }> {
    const { db } = this.#deps;
    const started = new Date();
    const revision = snapshot.revision;
    let factory = initial;
    for (let attempt = 1; ; attempt++) {
      const decision = decide(factory, revision, options.explicit);
      if (decision === 'skip')
        return outcome(factory.id, { result: 'skipped', revision, reason: factory.reason, message: factory.message });
      if (decision === 'unchanged') return this.#recordUnchanged(factory, snapshot, options, started);

      if (snapshot.refused && snapshot.refused.length > 0) {
        return this.#recordValidationFailed(factory, snapshot, options, started, snapshot.refused);
      }
      let ready: Prepared;
      try {
        ready =
          prepared && prepared.generation === factory.generation
            ? prepared
            : await this.prepare(factory, snapshot.files, { forApply: true, refreshSecrets: true });
      } catch (err) {
        // The secret provider or the database failed (not the definition): worth another try soon.
        this.#deps.log.error({ err, factory_id: factory.id, revision }, 'prepare failed');
        return this.#recordApplyFailed(factory, snapshot, options, started, err, []);
      }
      prepared = undefined;
      if (!ready.plan) {
        return this.#recordValidationFailed(factory, snapshot, options, started, ready.validation.diagnostics);
      }
      const plan = ready.plan;
      if (plan.deletesEverything && AUTOMATIC.has(options.trigger) && !options.explicit) {
        const count = plan.webhooks.length + plan.automations.length;
        return this.#recordFailure(
          factory,
          snapshot,
          options,
          started,
          'DeletionBlocked',
          deletionBlockedMessage(revision, count),
          warningDiagnostics(ready.validation),
          plan.warnings,
          plan.changes,
        );
      }
      let result: ApplyOutcome | { retry: FactoryRow } | { superseded: true };
      try {
        result = await db.transaction(async (tx) => {
          await sql.lockFactory(tx, factory.id);
          const fresh = await sql.getFactory(tx, factory.id);
          if (!fresh) throw new FactoryGoneError(factory.id);
          if (decide(fresh, revision, options.explicit) !== 'apply' || fresh.generation !== ready.generation)
            return { retry: fresh };
          if (await this.#supersededManagedCommit(tx, fresh, snapshot)) return { superseded: true as const };
          await this.#write(tx, fresh, plan, snapshot);
          const definition = withKeptIntegrations(ready.validation.definition!, fresh.definition);
          await reindexProviderTriggers(tx, { id: fresh.id, teamId: fresh.team_id }, definition);
          return this.#finalize(tx, fresh, snapshot, options, started, {
            result: 'applied',
            definition,
            liveChanged: plan.liveChanged,
            errors: warningDiagnostics(ready.validation),
            warnings: plan.warnings,
            changes: plan.changes,
          });
        });
      } catch (err) {
        if (err instanceof FactoryGoneError) throw err;
        this.#deps.log.error({ err, factory_id: factory.id, revision }, 'apply failed');
        return this.#recordApplyFailed(factory, snapshot, options, started, err, plan.warnings);
      }
      if ('superseded' in result) {
        return outcome(factory.id, {
          result: 'skipped',
          revision,
          message: `${revision} is no longer the head of the managed repository: a newer commit replaces it`,
        });
      }
      if ('retry' in result) {
        const fresh = result.retry;
        if (fresh.attempted_revision !== factory.attempted_revision && fresh.attempted_revision !== revision) {
          return {
            overtaken: true,
            outcome: outcome(factory.id, {
              result: 'skipped',
              revision,
              message: `another process handled ${fresh.attempted_revision} while ${revision} was being prepared`,
            }),
          };
        }
        // Another process applied (or refused) something meanwhile: decide again against what it left.
        if (attempt >= MAX_PLAN_ATTEMPTS)
          throw new AppError(
            'conflict',
            `factory ${factory.id} kept changing while ${revision} was being applied; retry`,
          );
        factory = result.retry;
        continue;
      }
      this.#deps.log.info(
        { factory_id: factory.id, revision, changes: result.changes.length },
        result.message ?? 'applied',
      );
      await this.#announce(result, plan.liveChanged);
      return result;
    }
  }

  /**
   * A managed commit that another process's newer commit (which contains it) replaced: applying it now would
   * take the factory back. Applies run under the factory's lock, so the head checked here is the one in force.
   */
  async #supersededManagedCommit(tx: Queryable, factory: FactoryRow, snapshot: SourceSnapshot): Promise<boolean> {
    if (factory.source.type !== 'managed' || !snapshot.commit.sha) return false;
    const head = await managedHeadSha(tx, factory.id);
    return head !== null && head !== snapshot.commit.sha;
  }

  #historyBase(factoryId: string, snapshot: SourceSnapshot, options: ReconcileOptions, started: Date) {
    return {
      id: newId('apl'),
      factory_id: factoryId,
      revision: snapshot.revision,
      commit_author: snapshot.commit.author,
      commit_message: snapshot.commit.message,
      commit_sha: snapshot.commit.sha,
      committed_at: snapshot.commit.time,
      trigger: options.trigger,
      started_at: started,
    };
  }

  async #write(tx: Queryable, factory: FactoryRow, plan: Plan, snapshot: SourceSnapshot): Promise<void> {
    const { cipher } = this.#deps;
    // Deletes first: a name freed by a deleted webhook can be taken by a created one.
    for (const op of plan.webhooks) if (op.op === 'delete') await sql.softDeleteWebhook(tx, op.uid);
    for (const op of plan.webhooks) {
      if (op.op === 'create') {
        await sql.insertWebhook(tx, {
          ...op.values,
          uid: op.uid!,
          teamId: factory.team_id,
          factoryId: factory.id,
          secretCiphertext: cipher.encrypt(op.secret),
        });
      } else if (op.op === 'update') {
        await sql.updateWebhook(tx, op.uid, op.values, op.secret === null ? null : cipher.encrypt(op.secret));
      }
    }
    for (const op of plan.automations) {
      if (op.op === 'delete') {
        await sql.softDeleteAutomation(tx, op.id);
      } else if (op.op === 'create') {
        await sql.insertAutomation(tx, { ...op.values, id: op.id!, teamId: factory.team_id, factoryId: factory.id });
        await sql.replaceAutomationTriggers(tx, op.id!, op.triggers);
      } else {
        await sql.updateAutomation(tx, op.id, op.values);
        await sql.replaceAutomationTriggers(tx, op.id, op.triggers);
      }
    }
    await sql.replaceFactoryFiles(tx, factory.id, snapshot.files);
  }

  /** The applied revision again: nothing live changes; history records it when asked for or when status moves. */
  async #recordUnchanged(
    factory: FactoryRow,
    snapshot: SourceSnapshot,
    options: ReconcileOptions,
    started: Date,
  ): Promise<ApplyOutcome> {
    const result = await this.#deps.db.transaction(async (tx) => {
      await sql.lockFactory(tx, factory.id);
      const fresh = await sql.getFactory(tx, factory.id);
      if (!fresh) throw new FactoryGoneError(factory.id);
      if (decide(fresh, snapshot.revision, options.explicit) !== 'unchanged') return undefined;
      return this.#finalize(tx, fresh, snapshot, options, started, { result: 'unchanged' });
    });
    if (result === undefined) return outcome(factory.id, { result: 'skipped', revision: snapshot.revision });
    await this.#announce(result, false);
    return result;
  }

  /** A revision refused for its definition's errors. */
  #recordValidationFailed(
    factory: FactoryRow,
    snapshot: SourceSnapshot,
    options: ReconcileOptions,
    started: Date,
    errors: Diagnostic[],
  ): Promise<ApplyOutcome> {
    const message = validationFailedMessage(snapshot.revision, errors);
    return this.#recordFailure(factory, snapshot, options, started, 'ValidationFailed', message, errors, []);
  }

  /** An apply that failed for a reason other than the definition (the database, the secret provider). */
  #recordApplyFailed(
    factory: FactoryRow,
    snapshot: SourceSnapshot,
    options: ReconcileOptions,
    started: Date,
    err: unknown,
    warnings: ApplyOutcome['warnings'],
  ): Promise<ApplyOutcome> {
    const message = applyFailedMessage(snapshot.revision, err);
    return this.#recordFailure(factory, snapshot, options, started, 'ApplyFailed', message, [], warnings);
  }

  async #recordFailure(
    factory: FactoryRow,
    snapshot: SourceSnapshot,
    options: ReconcileOptions,
    started: Date,
    reason: RevisionReason,
    message: string,
    errors: Diagnostic[],
    warnings: ApplyOutcome['warnings'],
    changes: ApplyOutcome['changes'] = [],
  ): Promise<ApplyOutcome> {
    const revision = snapshot.revision;
    const result = await this.#deps.db.transaction(async (tx) => {
      await sql.lockFactory(tx, factory.id);
      const fresh = await sql.getFactory(tx, factory.id);
      if (!fresh) throw new FactoryGoneError(factory.id);
      // Another process recorded this revision meanwhile: once is enough.
      if (decide(fresh, revision, options.explicit) !== 'apply') return undefined;
      return this.#finalize(tx, fresh, snapshot, options, started, {
        result: 'failed',
        reason,
        message,
        // However large the refused tree, the status and the history keep a bounded list.
        errors: capDiagnostics(errors),
        warnings,
        changes,
      });
    });
    if (result === undefined) return outcome(factory.id, { result: 'skipped', revision });
    this.#deps.log.warn({ factory_id: factory.id, revision, reason }, message);
    await this.#announce(result, false);
    return result;
  }

  /**
   * The one writer of a revision's status: the factory's status and its history entry, in the transaction
   * that decided them (and, for an apply, wrote the live state). Every path of a reconcile ends here.
   */
  async #finalize(
    tx: Queryable,
    fresh: FactoryRow,
    snapshot: SourceSnapshot,
    options: ReconcileOptions,
    started: Date,
    verdict: Verdict,
  ): Promise<ApplyOutcome> {
    const revision = snapshot.revision;
    const base = this.#historyBase(fresh.id, snapshot, options, started);
    if (verdict.result === 'failed') {
      const { reason, message, errors, warnings, changes } = verdict;
      await sql.markRevisionFailed(tx, fresh.id, { revision, reason, message, errors });
      // Its errors name lines of its own files: kept (the latest refusal only) so they can be shown there.
      if (reason === 'ValidationFailed' && snapshot.files.length > 0)
        await sql.replaceRefusedFiles(tx, fresh.id, revision, snapshot.files);
      const row = await sql.insertApply(tx, { ...base, result: 'failed', reason, message, errors, warnings, changes });
      return outcome(fresh.id, {
        result: 'failed',
        revision,
        reason,
        message,
        errors,
        warnings,
        changes,
        applyId: row.id,
        transient: reason === 'ApplyFailed',
      });
    }
    const message = appliedMessage(revision);
    if (verdict.result === 'unchanged') {
      // Nothing live changes: the warnings of the applied revision stay in the status.
      await sql.markRevisionApplied(tx, fresh.id, {
        revision,
        definition: null,
        liveChanged: false,
        message,
        warnings: fresh.state === 'applied' ? fresh.errors : [],
      });
      const row = await sql.insertApply(tx, {
        ...base,
        result: 'unchanged',
        reason: 'Applied',
        message,
        errors: [],
        warnings: [],
        changes: [],
      });
      return outcome(fresh.id, { result: 'unchanged', revision, reason: 'Applied', message, applyId: row.id });
    }
    const { definition, liveChanged, errors, warnings, changes } = verdict;
    await sql.markRevisionApplied(tx, fresh.id, { revision, definition, liveChanged, message, warnings: errors });
    const row = await sql.insertApply(tx, {
      ...base,
      result: 'applied',
      reason: 'Applied',
      message,
      errors,
      warnings,
      changes,
    });
    return outcome(fresh.id, {
      result: 'applied',
      revision,
      reason: 'Applied',
      message,
      errors,
      warnings,
      changes,
      applyId: row.id,
    });
  }

  /**
   * After the commit, the one place that makes a reconcile's result known: this process's routes (when live
   * webhooks changed), the other processes and the loops (through the bus).
   */
  async #announce(result: ApplyOutcome, liveChanged: boolean): Promise<void> {
    if (liveChanged) await announceLiveChange(this.#deps, result.factoryId);
    await this.#deps.bus.publish(FACTORIES_CHANGED_TOPIC, {
      factory_id: result.factoryId,
      event: 'reconciled',
      result: result.result as 'applied' | 'unchanged' | 'failed',
      ...(result.revision ? { revision: result.revision } : {}),
    });
  }

  // ---------------------------------------------------------------- managed factories

  /**
   * Changes a managed factory in one step: the current files → `mutate` → validate against live state →
   * commit → apply. An invalid result is refused with `definition_invalid` (422, diagnostics in the problem
   * document) and nothing is committed. A result equal to the current files commits nothing (`unchanged`).
   */
  async applyManagedChange(
    factoryId: string,
    mutate: (files: FactoryFileInput[]) => FactoryFileInput[] | Promise<FactoryFileInput[]>,
    commit: { author: CommitAuthor; message: string },
  ): Promise<ApplyOutcome> {
    let queue = this.#managedQueues.get(factoryId);
    if (!queue) {
      queue = new SerialQueue();
      this.#managedQueues.set(factoryId, queue);
    }
    return queue.run(async () => {
      for (let attempt = 1; ; attempt++) {
        const factory = await sql.getFactory(this.#deps.db, factoryId);
        if (!factory) throw new AppError('resource_not_found', `factory ${factoryId} does not exist`);
        if (factory.source.type !== 'managed') throw readOnlyError(factory);
        const repo = this.sourceFor(factory) as ManagedRepository;
        const head = await repo.fetch();
        const current = head?.files ?? [];
        const next = normalizeFiles(await mutate(current.map((f) => ({ path: f.path, content: f.content }))));
        if (head && sameFiles(current, next)) return this.#applyManaged(factory, head);
        const prepared = await this.prepare(factory, next, { forApply: true, refreshSecrets: true });
        if (!prepared.plan) throw definitionInvalid(prepared.validation.diagnostics);
        let sha: string;
        try {
          sha = await repo.commit(next, commit.author, commit.message, head?.commit.sha ?? undefined);
        } catch (err) {
          // Another process committed first: start again from its commit, so that both changes are kept.
          if (!isSourceError(err) || err.reason !== 'Conflict') throw err;
          if (attempt >= MAX_MANAGED_ATTEMPTS)
            throw new AppError(
              'conflict',
              `factory ${factoryId} kept changing while this change was being committed; retry`,
            );
          await sleep(Math.random() * MANAGED_RETRY_PAUSE_MS * attempt);
          continue;
        }
        const snapshot: SourceSnapshot = {
          revision: `main@sha1:${sha}`,
          files: next,
          commit: {
            sha,
            author: `${commit.author.name} <${commit.author.email}>`,
            message: commit.message,
            time: new Date(),
          },
        };
        return this.#applyManaged(factory, snapshot, prepared);
      }
    });
  }

  /** Applies a managed commit; when a newer one (which contains it) replaced it meanwhile, applies the head. */
  async #applyManaged(factory: FactoryRow, snapshot: SourceSnapshot, prepared?: Prepared): Promise<ApplyOutcome> {
    const result = await this.reconcileSnapshot(factory, snapshot, { trigger: 'managed', explicit: true }, prepared);
    if (result.result !== 'skipped') return result;
    return this.reconcile(factory.id, { trigger: 'managed', explicit: true });
  }
}

function normalizeFiles(files: readonly FactoryFileInput[]): FactoryFileInput[] {
  const seen = new Set<string>();
  const out: FactoryFileInput[] = [];
  for (const file of files) {
    const p = file.path.replace(/\\/g, '/').replace(/^\.?\/+/, '');
    if (!p || p.split('/').some((s) => s === '' || s === '.' || s === '..') || p.includes('\0')) {
      throw new AppError('invalid_request', `file path "${file.path}" must be relative, without "." or ".." segments`);
    }
    if (file.symlink)
      throw new AppError('invalid_request', `${p}: symbolic links cannot be written to a managed factory`);
    if (seen.has(p)) throw new AppError('invalid_request', `${p} appears twice`);
    seen.add(p);
    out.push({ path: p, content: file.content });
  }
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

function sameFiles(a: readonly FactoryFileInput[], b: readonly FactoryFileInput[]): boolean {
  if (a.length !== b.length) return false;
  const byPath = new Map(a.map((f) => [f.path, f.content]));
  return b.every((f) => byPath.get(f.path) === f.content);
}

/** 422 with the diagnostics; `hint`, what to do about them, ends the detail. */
export function definitionInvalid(all: readonly Diagnostic[], hint?: string): AppError {
  const diagnostics = uniqueDiagnostics(all);
  const errors = diagnostics.filter((d) => d.severity === 'error');
  const first = errors[0];
  const detail = first
    ? `${errors.length} error${errors.length === 1 ? '' : 's'}; first: ${first.file}:${first.line}:${first.column} ${first.code} ${first.message}`
    : 'the definition is invalid';
  return new AppError('definition_invalid', hint ? `${detail}; ${hint}` : detail, { extensions: { diagnostics } });
}

/** `where` is accepted for older callers; the message is built from the factory's source. */
export function readOnlyError(factory: FactoryRow, _where?: string): AppError {
  const source = factory.source;
  const detail =
    source.type === 'git'
      ? `factory ${factory.name} is defined in the repository ${sanitizeUrl(source.url)} (branch ${source.branch}${source.path ? `, path ${source.path}` : ''}): commit changes there`
      : source.type === 'directory'
        ? `factory ${factory.name} is defined in the directory ${source.path} on the server: edit the files there`
        : `factory ${factory.name} is managed here`;
  return new AppError('factory_read_only', detail, {
    extensions: {
      source:
        source.type === 'git'
          ? { type: 'git', url: sanitizeUrl(source.url), branch: source.branch }
          : { type: source.type },
    },
  });
}
