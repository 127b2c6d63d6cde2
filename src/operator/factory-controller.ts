import { FACTORIES_CHANGED_TOPIC } from '../kernel/topics.ts';
import type { Logger } from '../kernel/log.ts';
import type { OperatorContext } from './context.ts';
import { AppError } from '../kernel/errors.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { FactoryRow } from '../factories/apply/model.ts';
import * as reconcilerSql from '../factories/apply/sql.ts';
import { normalizeSourceSpec } from '../sources/spec.ts';
import type { GitSourceSpec } from '../sources/types.ts';
import { newId } from '../kernel/ids.ts';
import { ConditionSet } from './conditions.ts';
import { API_VERSION, FACTORY_KIND, FACTORY_PLURAL, GROUP, VERSION } from './crd.ts';
import type { EventRecorder } from './events.ts';
import { objectKey, parseDuration, splitKey, validateFactorySpec } from './factory-resource.ts';
import type { FactoryResource, FactorySpec, FactoryStatus } from './factory-resource.ts';
import { READY, STALLED, sameStatus, setFactoryConditions, statusEvents, webhookStatus } from './factory-status.ts';
import { Informer } from './informer.ts';
import type { KubeClients } from './kube.ts';
import { apiMessage, isNotFound, requestOptions } from './kube.ts';
import type { NamespaceTeams } from './namespace-teams.ts';
import * as sql from './sql.ts';
import type { KubernetesFactoryRow } from './sql.ts';
import { WorkQueue } from '../kernel/work-queue.ts';
import { TerminalError, runWorkers } from './reconcile.ts';
import type { Result } from './reconcile.ts';
import { applyRunEvent } from '../engine/engine.ts';
import { announceRunChanges } from '../engine/announce.ts';
import { Loop } from '../kernel/loop.ts';

export const FINALIZER = 'agentyard.dev/finalizer';
/** Set it to any new value to fetch and apply now (retrying a refused revision), like Flux's requestedAt. */
export const REQUESTED_AT_ANNOTATION = 'agentyard.dev/reconcile-requested-at';

/** What the Job executor must do when a Factory goes away. */
export interface FactoryCleanup {
  deleteFactoryJobs(namespace: string, factoryUid: string): Promise<void>;
}

export interface FactoryControllerOptions {
  ctx: OperatorContext;
  clients: KubeClients;
  teams: NamespaceTeams;
  events: EventRecorder;
  metrics: Metrics;
  log: Logger;
  cleanup?: FactoryCleanup;
  /** Every object is reconciled again this often even without a change (missed events, drift). */
  resyncMs?: number;
  concurrency?: number;
  /** Wait before checking again for a missing credentials Secret. */
  missingCredentialsRetryMs?: number;
  /** Watch Factories of this namespace only (undefined: every namespace). */
  watchNamespace?: string | undefined;
}

/**
 * The controller of `Factory` resources: each Factory is a git-sourced factory in its namespace's team.
 * The reconciler's loops (in this process, on the leader) fetch and apply its commits; this controller keeps
 * the factory row in step with the spec, asks for a fetch when the spec or the reconcile annotation
 * changes, and mirrors what the reconciler recorded into status (written once per reconcile) and Events.
 * A finalizer deletes the factory's webhooks, stops its runs and deletes their Jobs before the Factory goes.
 */
export class FactoryResourceController {
  readonly informer: Informer<FactoryResource>;
  readonly queue = new WorkQueue();
  readonly #o: FactoryControllerOptions;
  readonly #keysByFactory = new Map<string, string>();

  constructor(options: FactoryControllerOptions) {
    this.#o = options;
    const { custom, config } = options.clients;
    const namespace = options.watchNamespace;
    this.informer = new Informer<FactoryResource>({
      name: 'factories',
      config,
      path: namespace
        ? `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${FACTORY_PLURAL}`
        : `/apis/${GROUP}/${VERSION}/${FACTORY_PLURAL}`,
      list: async () => {
        const answer = namespace
          ? await custom.listNamespacedCustomObject({
              group: GROUP,
              version: VERSION,
              namespace,
              plural: FACTORY_PLURAL,
            })
          : await custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: FACTORY_PLURAL });
        const list = answer as {
          metadata?: { resourceVersion?: string };
          items: FactoryResource[];
        };
        // The list answer's items carry no kind/apiVersion; events and owner references need them.
        for (const item of list.items) Object.assign(item, { apiVersion: API_VERSION, kind: FACTORY_KIND });
        return list as never;
      },
      log: options.log,
    });
  }

  /** Runs until the signal aborts; resolves after the workers finished and the informer stopped. */
  async run(signal: AbortSignal): Promise<void> {
    const { ctx, metrics } = this.#o;
    const enqueue = (obj: FactoryResource): void => this.queue.add(objectKey(obj));
    this.informer.on('add', enqueue);
    this.informer.on('update', enqueue);
    this.informer.on('delete', enqueue);
    const unsubscribe = ctx.bus.subscribe(FACTORIES_CHANGED_TOPIC, (data) => {
      const id = (data as { factory_id?: string } | null)?.factory_id;
      if (id) void this.#enqueueFactory(id);
    });
    const removeQueue = metrics.addQueue('factories', () => this.queue.length);
    const resync = new Loop({
      name: 'factory resync',
      everyMs: this.#o.resyncMs ?? 5 * 60_000,
      atStart: false,
      pass: async () => {
        for (const obj of this.informer.list()) this.queue.add(objectKey(obj));
        await this.#sweepOrphans();
      },
      onError: (err) => this.#o.log.warn({ err }, 'factory orphan sweep failed'),
    }).start();
    try {
      await this.informer.start();
      void this.#sweepOrphans().catch((err: unknown) => this.#o.log.warn({ err }, 'factory orphan sweep failed'));
      await runWorkers({
        name: 'factories',
        queue: this.queue,
        reconcile: (key) => this.reconcile(key),
        concurrency: this.#o.concurrency ?? 2,
        signal,
        log: this.#o.log,
        observe: (outcome, seconds) => metrics.reconcileDuration.observe({ controller: 'factories', outcome }, seconds),
      });
    } finally {
      await resync.stop();
      unsubscribe();
      removeQueue();
      await this.informer.stop();
    }
  }

  async #enqueueFactory(factoryId: string): Promise<void> {
    let key = this.#keysByFactory.get(factoryId);
    if (!key) {
      const row = await sql.findKubernetesFactory(this.#o.ctx.db, factoryId).catch(() => undefined);
      if (!row) return;
      key = `${row.namespace}/${row.name}`;
      this.#keysByFactory.set(factoryId, key);
    }
    this.queue.add(key);
  }

  /** One reconcile of one Factory (thin: load, finalizer, then the phases with status written once). */
  async reconcile(key: string): Promise<Result | void> {
    const { namespace, name } = splitKey(key);
    const obj = this.informer.get(name, namespace);
    if (!obj) return;
    if (obj.metadata?.deletionTimestamp) return this.#finalize(obj);
    if (!obj.metadata?.finalizers?.includes(FINALIZER)) await this.#addFinalizer(obj);

    const generation = obj.metadata?.generation ?? 0;
    const previous = obj.status;
    const conditions = new ConditionSet(previous?.conditions, generation);
    const status: FactoryStatus = { ...previous };
    try {
      return await this.#reconcileFactory(obj, status, conditions);
    } catch (err) {
      if (!(err instanceof TerminalError)) {
        conditions.set(
          READY,
          'False',
          'ReconciliationFailed',
          `reconcile: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
      throw err;
    } finally {
      status.conditions = conditions.toArray();
      status.observedGeneration = generation;
      await this.#writeStatus(obj, previous, status);
    }
  }

  async #reconcileFactory(
    obj: FactoryResource,
    status: FactoryStatus,
    conditions: ConditionSet,
  ): Promise<Result | void> {
    const { ctx } = this.#o;
    const namespace = obj.metadata!.namespace!;
    const name = obj.metadata!.name!;
    const checked = validateFactorySpec(obj.spec);
    if ('error' in checked) {
      conditions.set(STALLED, 'True', 'InvalidSpec', checked.error);
      conditions.set(READY, 'False', 'InvalidSpec', checked.error);
      throw new TerminalError(checked.error);
    }
    const spec = checked.spec;
    const teamId = await this.#o.teams.teamFor(namespace);

    const credentials = await this.#credentialsKey(namespace, spec);
    let source: GitSourceSpec;
    try {
      source = this.#sourceSpec(spec, credentials);
    } catch (err) {
      const message =
        err instanceof AppError ? (err.detail ?? err.message).replace(/^source\./, 'spec.source.git.') : String(err);
      conditions.set(STALLED, 'True', 'InvalidSpec', message);
      conditions.set(READY, 'False', 'InvalidSpec', message);
      throw new TerminalError(message);
    }

    const ensured = await this.#ensureFactoryRow(obj, teamId, source, spec);
    if ('taken' in ensured) {
      const message = `the team of namespace ${namespace} already has a factory named "${name}" that no Factory owns`;
      conditions.set(STALLED, 'True', 'NameTaken', message);
      conditions.set(READY, 'False', 'NameTaken', message);
      throw new TerminalError(message);
    }
    const { kf } = ensured;
    this.#keysByFactory.set(kf.factory_id, `${namespace}/${name}`);
    status.factoryId = kf.factory_id;

    const requestedAt = obj.metadata?.annotations?.[REQUESTED_AT_ANNOTATION];
    const requested = requestedAt !== undefined && requestedAt !== status.lastHandledReconcileAt;
    const specChanged = status.observedGeneration !== obj.metadata?.generation;
    if (!kf.suspended && (requested || specChanged || ensured.created)) {
      await ctx.controller.request(kf.factory_id, 'sync', requested).catch((err: unknown) => {
        // A failed request is recorded on the row (and read below); only a stopping server matters here.
        if (err instanceof AppError && err.code === 'resource_unavailable') throw err;
      });
    }
    if (requested) status.lastHandledReconcileAt = requestedAt;

    const row = await reconcilerSql.getFactory(ctx.db, kf.factory_id);
    if (!row) throw new Error(`factory ${kf.factory_id} disappeared`);
    this.#mirror(
      row,
      kf,
      status,
      conditions,
      await reconcilerSql.listFactoryWebhooks(ctx.db, kf.factory_id, { includeDeleted: false }),
    );
    if (source.credentials_secret?.endsWith('/token') && row.source_error?.reason === 'CredentialsNotFound') {
      return { requeueAfterMs: this.#o.missingCredentialsRetryMs ?? 60_000 };
    }
  }

  #mirror(
    row: FactoryRow,
    kf: KubernetesFactoryRow,
    status: FactoryStatus,
    conditions: ConditionSet,
    webhooks: Parameters<typeof webhookStatus>[0],
  ): void {
    setFactoryConditions(conditions, row, { suspended: kf.suspended });
    status.appliedRevision = row.applied_revision ?? undefined;
    status.attemptedRevision = row.attempted_revision ?? undefined;
    status.lastAppliedAt = row.applied_at ? row.applied_at.toISOString().replace(/\.\d{3}Z$/, 'Z') : undefined;
    status.errors = row.errors;
    status.webhooks = webhookStatus(webhooks, kf.ingress_base_url ?? this.#o.ctx.config.webhookBaseUrl);
    status.webhookCount = status.webhooks.length;
  }

  /** The key of the credentials Secret: `ssh-privatekey` when the Secret holds one, else `token`. */
  async #credentialsKey(namespace: string, spec: FactorySpec): Promise<string | null> {
    const ref = spec.source.git.credentialsSecretRef;
    if (!ref) return null;
    try {
      const secret = await this.#o.clients.core.readNamespacedSecret(
        { name: ref.name, namespace },
        requestOptions({ signal: AbortSignal.timeout(10_000) }),
      );
      return `${ref.name}/${secret.data?.['ssh-privatekey'] !== undefined ? 'ssh-privatekey' : 'token'}`;
    } catch (err) {
      if (isNotFound(err)) return `${ref.name}/token`;
      throw err;
    }
  }

  #sourceSpec(spec: FactorySpec, credentials: string | null): GitSourceSpec {
    const git = spec.source.git;
    const normalized = normalizeSourceSpec({
      type: 'git',
      url: git.url,
      branch: git.branch,
      path: git.path,
      poll_interval_seconds: spec.suspend ? 0 : parseDuration(git.pollInterval ?? '1m'),
    });
    if (normalized.type !== 'git') throw new Error('not a git source');
    return { ...normalized, credentials_secret: credentials };
  }

  async #ensureFactoryRow(
    obj: FactoryResource,
    teamId: string,
    source: GitSourceSpec,
    spec: FactorySpec,
  ): Promise<{ kf: KubernetesFactoryRow; created: boolean } | { taken: true }> {
    const { ctx } = this.#o;
    const uid = obj.metadata!.uid!;
    const namespace = obj.metadata!.namespace!;
    const name = obj.metadata!.name!;
    const settings = {
      executor: spec.executor ?? 'kubernetes',
      suspended: spec.suspend ?? false,
      ingressBaseUrl: spec.ingress?.baseUrl?.replace(/\/+$/, '') ?? null,
    };
    const { controller } = ctx;
    let kf = await sql.findKubernetesFactoryByUid(ctx.db, uid);
    if (!kf) {
      const created = await ctx.db.transaction(async (tx) => {
        const existing = await reconcilerSql.findFactoryByName(tx, teamId, name);
        if (existing) {
          const owner = await sql.findKubernetesFactory(tx, existing.id);
          // An earlier Factory of that name whose deletion was never seen: its factory goes first.
          if (!owner) return undefined;
          await ctx.factories.softDelete(teamId, existing.id, { within: tx });
          await sql.softDeleteKubernetesFactory(tx, existing.id);
        }
        const row = await ctx.factories.insertRecord({ id: newId('fac'), teamId, name, source }, { within: tx });
        const k = await sql.insertKubernetesFactory(tx, { factoryId: row.id, namespace, name, uid, ...settings });
        return { row, k };
      });
      if (!created) return { taken: true };
      await ctx.bus.publish(FACTORIES_CHANGED_TOPIC, { factory_id: created.row.id, event: 'created' });
      await controller.track(created.row);
      return { kf: created.k, created: true };
    }
    const row = await reconcilerSql.getFactory(ctx.db, kf.factory_id);
    if (row && !sameJson(row.source, source)) {
      const updated = await ctx.factories.updateSource(row.id, source);
      if (updated) {
        await ctx.bus.publish(FACTORIES_CHANGED_TOPIC, { factory_id: row.id, event: 'updated' });
        await controller.track(updated);
      }
    }
    if (
      kf.executor !== settings.executor ||
      kf.suspended !== settings.suspended ||
      kf.ingress_base_url !== settings.ingressBaseUrl
    ) {
      kf = (await sql.updateKubernetesFactory(ctx.db, kf.factory_id, settings)) ?? kf;
    }
    return { kf, created: false };
  }

  async #writeStatus(obj: FactoryResource, previous: FactoryStatus | undefined, next: FactoryStatus): Promise<void> {
    const namespace = obj.metadata!.namespace!;
    for (const event of statusEvents(previous, next, namespace)) {
      await this.#o.events.record(obj, event.type, event.reason, event.message);
      this.#o.metrics.kubernetesEvents.inc({ type: event.type, reason: event.reason });
    }
    if (sameStatus(previous, next)) return;
    try {
      // A merge patch replaces lists whole: conditions, errors and webhooks are written as computed.
      await this.#o.clients.custom.patchNamespacedCustomObjectStatus(
        {
          group: GROUP,
          version: VERSION,
          namespace,
          plural: FACTORY_PLURAL,
          name: obj.metadata!.name!,
          body: { status: { ...nullMissing(previous, next), ...next } },
        },
        requestOptions({ patch: 'merge', signal: AbortSignal.timeout(15_000) }),
      );
    } catch (err) {
      if (isNotFound(err)) return;
      throw new Error(`write status: ${apiMessage(err)}`);
    }
  }

  async #addFinalizer(obj: FactoryResource): Promise<void> {
    const finalizers = [...(obj.metadata?.finalizers ?? []), FINALIZER];
    await this.#o.clients.custom.patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        namespace: obj.metadata!.namespace!,
        plural: FACTORY_PLURAL,
        name: obj.metadata!.name!,
        body: [
          { op: 'test', path: '/metadata/resourceVersion', value: obj.metadata!.resourceVersion },
          { op: obj.metadata?.finalizers ? 'replace' : 'add', path: '/metadata/finalizers', value: finalizers },
        ],
      },
      requestOptions({ patch: 'json', signal: AbortSignal.timeout(15_000) }),
    );
  }

  /** Deletes what the Factory made (webhooks soft, runs cancelled, Jobs deleted), then lets it go. */
  async #finalize(obj: FactoryResource): Promise<void> {
    if (!obj.metadata?.finalizers?.includes(FINALIZER)) return;
    const kf = await sql.findKubernetesFactoryByUid(this.#o.ctx.db, obj.metadata.uid!);
    if (kf) await this.#deleteFactory(kf, 'the Factory was deleted');
    await this.#o.cleanup?.deleteFactoryJobs(obj.metadata.namespace!, obj.metadata.uid!);
    await this.#o.clients.custom
      .patchNamespacedCustomObject(
        {
          group: GROUP,
          version: VERSION,
          namespace: obj.metadata.namespace!,
          plural: FACTORY_PLURAL,
          name: obj.metadata.name!,
          body: [
            { op: 'test', path: '/metadata/resourceVersion', value: obj.metadata.resourceVersion },
            {
              op: 'replace',
              path: '/metadata/finalizers',
              value: obj.metadata.finalizers.filter((f) => f !== FINALIZER),
            },
          ],
        },
        requestOptions({ patch: 'json', signal: AbortSignal.timeout(15_000) }),
      )
      .catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
    this.#o.log.info(
      { namespace: obj.metadata.namespace, name: obj.metadata.name },
      `Factory ${obj.metadata.namespace}/${obj.metadata.name} finalized`,
    );
  }

  async #deleteFactory(kf: KubernetesFactoryRow, why: string): Promise<void> {
    const { ctx } = this.#o;
    for (const run of await sql.listActiveFactoryRuns(ctx.db, kf.factory_id)) {
      const event = run.state === 'PENDING' ? 'error' : 'cancel';
      const moved = await applyRunEvent(ctx.db, run.id, event, {
        statusMessage: { message: `${why}: its runs were stopped`, error_code: 'factory_deleted' },
      });
      if (moved) await announceRunChanges(ctx.bus, [moved]);
    }
    const row = await reconcilerSql.getFactory(ctx.db, kf.factory_id);
    if (row) {
      await ctx.factories.delete(row.team_id, row.id).catch((err: unknown) => {
        if (!(err instanceof AppError && err.code === 'resource_not_found')) throw err;
      });
    }
    await sql.softDeleteKubernetesFactory(ctx.db, kf.factory_id);
    this.#keysByFactory.delete(kf.factory_id);
  }

  /**
   * Factories whose Factory no longer exists (deleted while no operator ran, or its finalizer removed by
   * hand) are deleted too. Only with a synced cache: an empty cache must never delete everything.
   */
  async #sweepOrphans(): Promise<void> {
    if (!this.informer.synced) return;
    for (const kf of await sql.listKubernetesFactories(this.#o.ctx.db, this.#o.watchNamespace)) {
      // Read the cache after the row: a row exists only once its Factory was in the cache.
      if (!this.informer.synced || this.informer.get(kf.name, kf.namespace)?.metadata?.uid === kf.uid) continue;
      this.#o.log.info(
        { namespace: kf.namespace, name: kf.name },
        `Factory ${kf.namespace}/${kf.name} is gone: deleting its factory`,
      );
      await this.#deleteFactory(kf, 'the Factory no longer exists');
      await this.#o.cleanup?.deleteFactoryJobs(kf.namespace, kf.uid);
    }
  }
}

/** Equal as JSON values, whatever the key order (jsonb stores keys in its own order). */
function sameJson(a: unknown, b: unknown): boolean {
  const sorted = (v: unknown): unknown =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>)
            .sort(([x], [y]) => (x < y ? -1 : 1))
            .map(([k, x]) => [k, sorted(x)]),
        )
      : v;
  return JSON.stringify(sorted(a)) === JSON.stringify(sorted(b));
}

/** Members present before but absent now must be sent as null, or a merge patch keeps them. */
function nullMissing(previous: FactoryStatus | undefined, next: FactoryStatus): Record<string, null> {
  const out: Record<string, null> = {};
  for (const key of Object.keys(previous ?? {}))
    if ((next as Record<string, unknown>)[key] === undefined) out[key] = null;
  return out;
}
