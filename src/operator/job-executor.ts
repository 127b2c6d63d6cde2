import { RUNS_QUEUED_TOPIC, RUN_CHANGED_TOPIC } from '../kernel/topics.ts';
import type { V1Job } from '@kubernetes/client-node';
import { CoalescedPass } from '../kernel/coalesced-pass.ts';
import type { Logger } from '../kernel/log.ts';
import { sessionLinksFor } from '../runs/session-link.ts';
import { factoryMcpUrl } from '../kernel/api.ts';
import { ExecutionRecorder } from '../execution/recorder.ts';
import type { ExecutionOutcome } from '../execution/assignment.ts';
import type { OperatorContext } from './context.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { getFactory } from '../factories/apply/sql.ts';
import type { RunRow } from '../engine/model.ts';
import { getRunById } from '../runs/sql.ts';
import { SERVICE_WORKER_HOSTS } from '../runs/service.ts';
import { isTerminal } from '../engine/state-machine.ts';
import type { EventRecorder } from './events.ts';
import type { FactoryCleanup } from './factory-controller.ts';
import { InvocationError, prepareJobInvocation } from './harness.ts';
import { Informer } from './informer.ts';
import {
  FACTORY_UID_LABEL,
  MANAGED_BY,
  RUN_ID_LABEL,
  RunSecretTooLarge,
  buildJob,
  buildRunSecret,
  jobNameFor,
  jobOutcome,
} from './job-spec.ts';
import type { JobSettings } from './job-spec.ts';
import { buildNetworkPolicy } from './network-policy.ts';
import type { KubeClients } from './kube.ts';
import { apiMessage, isConflict, isNotFound, requestOptions, statusCode } from './kube.ts';
import * as sql from './sql.ts';
import { WorkQueue } from '../kernel/work-queue.ts';
import { runWorkers } from './reconcile.ts';
import { applyRunEvent } from '../engine/engine.ts';
import { claimRuns } from '../engine/claim.ts';
import type { Claimed } from '../engine/claim.ts';
import { HARNESS_TYPES, harnessChoice } from '../execution/settings.ts';
import type { HarnessType } from '../execution/settings.ts';
import { announceRunChanges } from '../engine/announce.ts';
import { Loop } from '../kernel/loop.ts';

export interface JobExecutorOptions {
  ctx: OperatorContext;
  clients: KubeClients;
  settings: JobSettings;
  events: EventRecorder;
  metrics: Metrics;
  log: Logger;
  /** How often queued runs are looked for without a hint (`runs.queued`), and open Jobs checked again. */
  pollMs?: number;
  /** Run Jobs of this namespace's Factories only (undefined: every namespace). */
  watchNamespace?: string | undefined;
}

const JOB_SELECTOR = `app.kubernetes.io/managed-by=${MANAGED_BY['app.kubernetes.io/managed-by']},${RUN_ID_LABEL}`;

/** A Job's execution holds a lease like any executor's; the leader renews it while the Job lives. */
const JOB_LEASE_MS = 10 * 60_000;

/** A run that cannot become a Job for a reason of its own (a missing secret, a macOS runner...): it ends ERROR. */
class LaunchFailure extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

interface Claim extends Claimed<HarnessType> {
  jobName: string;
  kf: { factory_id: string; namespace: string; uid: string; name: string };
}

/**
 * The `kubernetes` executor: queued runs of Factories with `executor: kubernetes` become batch/v1 Jobs in
 * the Factory's namespace (claimed through the run engine's one claim, so two executors never take one run), and each Job's
 * status drives its run's state: a started pod starts the run, Complete succeeds it, a failed agent fails
 * it, an eviction, a timeout or a deleted Job ends it ERROR saying why. A cancelled run's Job is deleted
 * with foreground propagation.
 */
export class JobExecutor implements FactoryCleanup {
  readonly informer: Informer<V1Job>;
  readonly queue = new WorkQueue();
  readonly #o: JobExecutorOptions;
  readonly #recorder: ExecutionRecorder;
  readonly #dispatches = new CoalescedPass(
    () => this.#dispatchOnce().catch((err: unknown) => this.#o.log.error({ err }, 'dispatching runs to Jobs failed')),
    () => !this.#signal?.aborted && this.informer.synced,
  );
  #signal: AbortSignal | undefined;

  constructor(options: JobExecutorOptions) {
    this.#o = options;
    this.#recorder = new ExecutionRecorder(options.ctx.db, options.ctx.bus, options.log);
    const { batch, config } = options.clients;
    const namespace = options.watchNamespace;
    this.informer = new Informer<V1Job>({
      name: 'jobs',
      config,
      path: namespace ? `/apis/batch/v1/namespaces/${namespace}/jobs` : '/apis/batch/v1/jobs',
      labelSelector: JOB_SELECTOR,
      list: async () => {
        const list = namespace
          ? await batch.listNamespacedJob({ namespace, labelSelector: JOB_SELECTOR })
          : await batch.listJobForAllNamespaces({ labelSelector: JOB_SELECTOR });
        // List items carry no kind; Events name their object by it.
        for (const job of list.items) Object.assign(job, { apiVersion: 'batch/v1', kind: 'Job' });
        return list;
      },
      log: options.log,
    });
  }

  informers(): Informer<V1Job>[] {
    return [this.informer];
  }

  async run(signal: AbortSignal): Promise<void> {
    const { ctx, metrics } = this.#o;
    this.#signal = signal;
    const byJob = (job: V1Job): void => {
      const runId = job.metadata?.labels?.[RUN_ID_LABEL];
      if (runId) this.queue.add(runId);
    };
    this.informer.on('add', byJob);
    this.informer.on('update', byJob);
    this.informer.on('delete', byJob);
    const unsubscribe = [
      ctx.bus.subscribe(RUNS_QUEUED_TOPIC, () => this.dispatch()),
      ctx.bus.subscribe(RUN_CHANGED_TOPIC, (data) => {
        const runId = (data as { run_id?: string } | null)?.run_id;
        if (runId) this.queue.add(runId);
      }),
    ];
    const removeQueue = metrics.addQueue('jobs', () => this.queue.length);
    let polls = 0;
    const poll = new Loop({
      name: 'job dispatch poll',
      everyMs: this.#o.pollMs ?? 5_000,
      atStart: false,
      pass: async () => {
        this.dispatch();
        // Now and then: renew the leases of open Jobs, and look at each again (missed events, runs ended elsewhere).
        if (++polls % 12 === 0) await this.#heartbeat();
      },
      onError: (err) => this.#o.log.warn({ err }, 'renewing Job leases failed'),
    }).start();
    try {
      await this.informer.start();
      await this.#enqueueOpen();
      this.dispatch();
      await runWorkers({
        name: 'jobs',
        queue: this.queue,
        reconcile: (runId) => this.reconcileRun(runId),
        concurrency: 2,
        signal,
        log: this.#o.log,
        observe: (outcome, seconds) => metrics.reconcileDuration.observe({ controller: 'jobs', outcome }, seconds),
      });
    } finally {
      await poll.stop();
      for (const u of unsubscribe) u();
      removeQueue();
      await this.#dispatches.idle();
      await this.informer.stop();
    }
  }

  async #enqueueOpen(): Promise<void> {
    for (const row of await sql.listOpenRunJobs(this.#o.ctx.db, this.#o.watchNamespace).catch(() => []))
      this.queue.add(row.run_id);
  }

  async #heartbeat(): Promise<void> {
    const open = await sql.listOpenRunJobs(this.#o.ctx.db, this.#o.watchNamespace);
    const ids = open.map((r) => r.execution_id).filter((id): id is string => id !== null);
    await this.#recorder.heartbeat(ids, JOB_LEASE_MS);
    for (const row of open) this.queue.add(row.run_id);
  }

  /** Looks for queued runs now (coalesced: one pass at a time, one more if asked meanwhile). */
  dispatch(): void {
    this.#dispatches.request();
  }

  async #dispatchOnce(): Promise<void> {
    const { db, bus } = this.#o.ctx;
    const { settings } = this.#o;
    const namespace = this.#o.watchNamespace;
    const capacity = settings.maxConcurrentJobs - (await sql.countOpenRunJobs(db, namespace));
    if (capacity <= 0) return;
    const harnesses = harnessChoice(HARNESS_TYPES, settings.harness.defaultHarness);
    await this.#refuseUnsupported(harnesses.spellings, capacity);
    // the engine's one claim, for this executor kind (ay_claim_runs, src/engine/functions.sql)
    // (told below with announceRunChanges, which also tells the lifecycle step `claimed`)
    const claimed = await claimRuns(
      db,
      undefined,
      { kind: 'kubernetes', serviceHosts: [...SERVICE_WORKER_HOSTS], namespace },
      { limit: capacity, harnesses, executor: `kubernetes:${namespace ?? '*'}`, leaseMs: JOB_LEASE_MS },
    );
    if (claimed.length === 0) return;
    await announceRunChanges(
      bus,
      claimed.map((c) => c.run),
    );
    const factories = await sql.kubernetesFactoriesByFactory(
      db,
      claimed.map((c) => c.run.factory_id).filter((id): id is string => id !== null),
    );
    for (const c of claimed) {
      const kf = c.run.factory_id ? factories.get(c.run.factory_id) : undefined;
      if (!kf) {
        // the Factory went away (or stopped using Jobs) since the claim: the run goes back to the queue
        await this.#recorder.release(c.executionId, c.run.id, 'Back in the queue: its Factory no longer runs Jobs');
        continue;
      }
      const jobName = jobNameFor(c.executionId);
      await sql.insertRunJob(db, {
        runId: c.run.id,
        executionId: c.executionId,
        factoryId: kf.factory_id,
        namespace: kf.namespace,
        jobName,
      });
      await this.#launch({ ...c, jobName, kf });
    }
  }

  /** Queued runs whose harness no Job runs end ERROR (`harness_unavailable`) instead of waiting for ever. */
  async #refuseUnsupported(spellings: readonly string[], limit: number): Promise<void> {
    const { db, bus } = this.#o.ctx;
    const ended: RunRow[] = [];
    for (const r of await sql.queuedKubernetesRunsWithoutHarness(
      db,
      [...SERVICE_WORKER_HOSTS],
      spellings,
      limit,
      this.#o.watchNamespace,
    )) {
      const run = await applyRunEvent(db, r.id, 'error', {
        statusMessage: {
          message: `no harness runs "${r.harness ?? 'oz'}" in Kubernetes Jobs (AGENTYARD_JOB_DEFAULT_HARNESS)`,
          error_code: 'harness_unavailable',
        },
      });
      if (run) ended.push(run);
    }
    await announceRunChanges(bus, ended);
  }

  /** Creates the run's Job (suspended), its Secret (owned by the Job), then lets the Job start. */
  async #launch(claim: Claim): Promise<void> {
    const { ctx, clients, settings, log } = this.#o;
    const { run, kf, jobName: name } = claim;
    const namespace = kf.namespace;
    const signal = AbortSignal.timeout(30_000);
    let created: V1Job | undefined;
    try {
      const factory = await getFactory(ctx.db, kf.factory_id);
      const definition = factory?.definition;
      const agent = definition?.agents.find((a) => a.name === run.config.name);
      const runnerName = run.config.runner_id ?? agent?.execution.runner ?? undefined;
      const runner = runnerName ? definition?.runners.find((r) => r.name === runnerName) : undefined;
      if (runner && runner.platform.os !== 'linux')
        throw new LaunchFailure(
          'runner_unsupported',
          `runner ${runner.name} is a ${runner.platform.os} runner; Kubernetes Jobs run Linux images only`,
        );
      const provider = ctx.secrets;
      const secrets = new Map<string, string>();
      for (const secretName of agent?.execution.secrets ?? definition?.factory.secrets ?? []) {
        const value = await provider.get(run.team_id, secretName);
        if (value === undefined)
          throw new LaunchFailure(
            'secret_not_found',
            `the managed secret "${secretName}" the agent declares does not exist (a Secret in namespace ${namespace})`,
          );
        secrets.set(secretName, value);
      }
      let invocation;
      try {
        invocation = await prepareJobInvocation(
          {
            db: ctx.db,
            secrets: provider,
            sessionLink: sessionLinksFor(ctx).urlFor,
            factoryMcpUrl: () => factoryMcpUrl(ctx.config.publicUrl),
          },
          run,
          { id: claim.executionId, attempt: claim.attempt, harness: claim.harness },
          settings.harness,
        );
      } catch (err) {
        if (err instanceof InvocationError) throw new LaunchFailure(err.errorCode, err.message);
        throw err;
      }
      const input = {
        run,
        jobName: name,
        namespace,
        factory: { name: kf.name, uid: kf.uid },
        runner,
        invocation,
        secrets,
        settings,
      };
      const body = buildJob(input);
      try {
        created = await clients.batch.createNamespacedJob({ namespace, body }, requestOptions({ signal }));
      } catch (err) {
        if (!isConflict(err)) throw err;
        created = await clients.batch.readNamespacedJob({ name, namespace }, requestOptions({ signal }));
      }
      const secret = buildRunSecret(input, { name, uid: created.metadata!.uid! });
      try {
        await clients.core.createNamespacedSecret({ namespace, body: secret }, requestOptions({ signal }));
      } catch (err) {
        if (!isConflict(err)) throw err;
      }
      // the egress policy of the runner, as far as a NetworkPolicy can say it (docs/governance.md, "Egress")
      const policy = buildNetworkPolicy({
        jobName: name,
        namespace,
        runId: run.id,
        job: { name, uid: created.metadata!.uid! },
        runner,
        serverUrl: ctx.config.publicUrl,
      });
      try {
        await clients.networking.createNamespacedNetworkPolicy({ namespace, body: policy }, requestOptions({ signal }));
      } catch (err) {
        if (!isConflict(err)) throw err;
      }
      await sql.setRunJobLaunched(ctx.db, run.id, created.metadata!.uid!, invocation.followupIds);
      await clients.batch.patchNamespacedJob(
        { name, namespace, body: { spec: { suspend: false } } },
        requestOptions({ patch: 'merge', signal }),
      );
      log.info({ run_id: run.id, job: `${namespace}/${name}` }, `run ${run.id} runs as Job ${namespace}/${name}`);
    } catch (err) {
      await this.#launchFailed(claim, created, err);
    }
  }

  async #launchFailed(claim: Claim, created: V1Job | undefined, err: unknown): Promise<void> {
    const { ctx, clients, log } = this.#o;
    const { run, kf, jobName } = claim;
    const code = statusCode(err);
    // The API server is unreachable or overloaded: give the run back to the queue. Anything else is the run's own problem.
    const transient =
      !(err instanceof LaunchFailure) &&
      !(err instanceof RunSecretTooLarge) &&
      (code === undefined || code >= 500 || code === 429);
    const failure =
      err instanceof LaunchFailure
        ? err
        : err instanceof RunSecretTooLarge
          ? new LaunchFailure('run_too_large', err.message)
          : new LaunchFailure(
              'job_create_failed',
              `creating the run's Job ${kf.namespace}/${jobName} failed: ${apiMessage(err)}`,
            );
    log.warn(
      { run_id: run.id, err: failure.message },
      `run ${run.id}: ${failure.message}${transient ? ' (queued again)' : ''}`,
    );
    if (created) {
      await clients.batch
        .deleteNamespacedJob(
          { name: jobName, namespace: kf.namespace, propagationPolicy: 'Foreground' },
          requestOptions({ signal: AbortSignal.timeout(10_000) }),
        )
        .catch(() => {});
    }
    if (transient) {
      await sql.deleteRunJob(ctx.db, run.id);
      await this.#recorder.release(claim.executionId, run.id, failure.message);
    } else {
      await sql.finishRunJob(ctx.db, run.id);
      await this.#recorder.finished({
        executionId: claim.executionId,
        runId: run.id,
        outcome: { kind: 'error', exitCode: null, message: failure.message, errorCode: failure.code },
      });
    }
  }

  /** Moves a run by its Job's status, or deletes the Job of a run that ended elsewhere (cancelled). */
  async reconcileRun(runId: string): Promise<void> {
    const { ctx, clients, settings } = this.#o;
    const row = await sql.getOpenRunJob(ctx.db, runId);
    if (!row?.execution_id) return;
    const executionId = row.execution_id;
    const run = await getRunById(ctx.db, runId);
    if (!run) return;
    const job = this.informer.get(row.job_name, row.namespace);
    const where = `Job ${row.namespace}/${row.job_name}`;
    const finish = async (outcome: ExecutionOutcome): Promise<void> => {
      await sql.finishRunJob(ctx.db, runId);
      await this.#recorder.finished({ executionId, runId, outcome });
    };

    const current = (run as RunRow & { execution_id?: string | null }).execution_id;
    if (isTerminal(run.state) || (current !== undefined && current !== executionId)) {
      // Cancelled, or ended elsewhere: the Job has nothing left to do.
      if (job && !job.metadata?.deletionTimestamp && jobOutcome(job).kind === 'running')
        await this.#deleteJob(row.namespace, row.job_name);
      await finish({
        kind: run.state === 'CANCELLED' ? 'cancelled' : 'lost',
        exitCode: null,
        message: `the run is ${run.state}; ${where} was deleted`,
      });
      return;
    }
    if (!job) {
      // Launching: the Job may not be in the cache yet. Once it was created, its absence means it was deleted.
      if (!row.job_uid || !this.informer.synced) return;
      const live = await clients.batch
        .readNamespacedJob(
          { name: row.job_name, namespace: row.namespace },
          requestOptions({ signal: AbortSignal.timeout(10_000) }),
        )
        .catch((err: unknown) => {
          if (isNotFound(err)) return undefined;
          throw err;
        });
      if (live && live.metadata?.uid === row.job_uid) return;
      await finish({
        kind: 'error',
        exitCode: null,
        message: `the run's ${where} was deleted before the run finished`,
        errorCode: 'job_deleted',
      });
      return;
    }
    if (row.job_uid && job.metadata?.uid !== row.job_uid) return;
    const outcome = jobOutcome(job);
    // A Job that ended before its start was seen did start.
    if (run.state === 'CLAIMED' && (outcome.kind !== 'running' || outcome.started)) {
      await this.#recorder.started({
        executionId,
        runId,
        workspace: '/workspace',
        leaseMs: JOB_LEASE_MS,
        followupIds: row.followup_ids,
        where,
      });
    }
    if (outcome.kind === 'running') return;
    if (outcome.kind === 'succeeded') {
      await finish({ kind: 'succeeded', exitCode: 0, message: `${where} completed` });
    } else {
      await finish({
        kind: outcome.event === 'fail' ? 'failed' : 'error',
        exitCode: null,
        message: outcome.message,
        errorCode: outcome.code,
      });
      await this.#o.events.record(job, 'Warning', 'RunFailed', `run ${runId}: ${outcome.message}`);
    }
    if (settings.deleteFinishedJobs) await this.#deleteJob(row.namespace, row.job_name);
  }

  async #deleteJob(namespace: string, name: string): Promise<void> {
    try {
      await this.#o.clients.batch.deleteNamespacedJob(
        { name, namespace, propagationPolicy: 'Foreground' },
        requestOptions({ signal: AbortSignal.timeout(10_000) }),
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /** Deletes every Job of a Factory (its finalizer, or a Factory found gone). */
  async deleteFactoryJobs(namespace: string, factoryUid: string): Promise<void> {
    const jobs = this.informer
      .list(namespace)
      .filter((j) => j.metadata?.labels?.[FACTORY_UID_LABEL] === factoryUid && !j.metadata?.deletionTimestamp);
    for (const job of jobs) await this.#deleteJob(namespace, job.metadata!.name!);
  }
}
