/**
 * The composition root: builds every service of a server process with its dependencies passed in, the route
 * plugins handed the services they need, and the ordered start/stop list of each role. Reading this file tells
 * how a process is wired; nothing else keeps services in module-level registries.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Role } from './config.ts';
import type { Logger } from './kernel/log.ts';
import { startSpawner } from './kernel/spawner-link.ts';
import type { FactoryResourceController } from './operator/factory-controller.ts';
import type { JobExecutor } from './operator/job-executor.ts';
import type { JobSettings } from './operator/job-spec.ts';
import type { KubeClients } from './operator/kube.ts';
import type { ServiceContext } from './context.ts';
import { OutboxEvaluator } from './automations/evaluator.ts';
import { knownModels } from './runs/models.ts';
import type { EvaluatorOptions } from './automations/evaluator.ts';
import {
  registerAutomationManagementRoutes,
  registerAutomationReadRoutes,
  registerProviderTestRoute,
} from './automations/routes.ts';
import { ServiceExecutor } from './execution/executor.ts';
import { Reaper } from './engine/reaper.ts';
import { WorkspaceSweeper } from './execution/sweeper.ts';
import { ExecutionRecorder } from './execution/recorder.ts';
import { registerWorkerRoutes } from './execution/routes.ts';
import { executionSettings } from './execution/settings.ts';
import type { ExecutionSettings } from './execution/settings.ts';
import { describeSandbox } from './execution/sandbox/index.ts';
import { startWaitingAnnotations } from './execution/waiting.ts';
import { consoleRoutes } from './console/routes.ts';
import { readTranscript } from './runs/transcript.ts';
import { isAppError } from './kernel/errors.ts';
import { DefinitionPool, poolOptionsFor } from './definitions/pool.ts';
import { registerFactoryFileRoutes } from './factories/factory-file-routes.ts';
import { registerFactoryRoutes } from './factories/routes.ts';
import { authorizeRunSecrets } from './factories/secret-grants.ts';
import { FactoryService } from './factories/service.ts';
import { reportStartupFactory } from './factories/startup-report.ts';
import { countReconcileOutcomes } from './health/reconcile-outcomes.ts';
import { ReadinessChecks } from './health/readiness.ts';
import { registerHealthRoutes } from './health/routes.ts';
import { errorDocsPlugin } from './http/error-docs.ts';
import { registerAgentIdentityRoutes } from './identity/agent-identities.ts';
import { registerIdentityRoutes } from './identity/routes.ts';
import { registerIngressRoutes } from './ingress/routes.ts';
import { registerDeliveryLogRoutes } from './ingress/delivery-log-routes.ts';
import { ConnectionCache } from './integrations/connections.ts';
import { IntegrationJobRunner } from './integrations/integration-jobs.ts';
import { BenchmarkService } from './scoring/benchmarks.ts';
import { Judge } from './scoring/judge.ts';
import { registerScoringRoutes } from './scoring/routes.ts';
import { ScoringRunner, scoringSettingsFrom } from './scoring/runner.ts';
import type { ScoringSettings } from './scoring/runner.ts';
import { linearMentionsHandler } from './integrations/linear-mentions.ts';
import { pullFilesHandler } from './integrations/pull-files.ts';
import { factoryCheckHandler } from './factories/config-check.ts';
import { registerProviderEventRoutes } from './integrations/events-routes.ts';
import { registerIntegrationRoutes } from './integrations/routes.ts';
import { providerOf, teamConnection } from './integrations/lookup.ts';
import { registerProviderIdentityRoutes } from './integrations/identity-routes.ts';
import { createIngressRuntime, startDeliveryRetention } from './ingress/runtime.ts';
import { AuthLockouts } from './ingress/lockouts.ts';
import { DEFAULT_INGRESS_LIMITS } from './ingress/limits.ts';
import type { IngressOptions, IngressRuntime } from './ingress/runtime.ts';
import { systemClock } from './kernel/clock.ts';
import { chatContinuation } from './orchestration/continuation.ts';
import { registerFactoryInterfaceRoutes } from './orchestration/routes.ts';
import { FactoryInterface } from './orchestration/service.ts';
import { treeLimits } from './orchestration/settings.ts';
import { cancelOverdue } from './runs/tree.ts';
import type { TreeLimits } from './runs/tree.ts';
import { factoryMcpUrl } from './kernel/api.ts';
import type { Clock } from './kernel/clock.ts';
import { CREDENTIALS_REVOKED_TOPIC, DELIVERIES_ACCEPTED_TOPIC } from './kernel/topics.ts';
import { createMetrics } from './metrics/metrics.ts';
import type { Metrics } from './metrics/metrics.ts';
import type { RoutePlugin } from './plugin.ts';
import { FactoryController } from './factories/controller.ts';
import { registerAttachmentRoutes } from './runs/attachments.ts';
import { registerCatalogRoutes } from './runs/catalog-routes.ts';
import { registerConversationRoutes } from './runs/conversation-routes.ts';
import { registerEventRoutes } from './runs/events-routes.ts';
import { registerFollowupListRoute, registerRunRoutes, registerSessionPageRoute } from './runs/routes.ts';
import { RunService } from './runs/service.ts';
import { sessionLinksFor } from './runs/session-link.ts';
import type { SessionLinks } from './runs/session-link.ts';
import { registerScheduleRoutes } from './schedules/routes.ts';
import { Scheduler } from './schedules/scheduler.ts';
import { ScheduleService } from './schedules/service.ts';
import { AutomationScheduleSync } from './schedules/sync-runner.ts';
import { DatabaseSecretProvider, ServerSecrets } from './secrets/provider.ts';
import { sourceUrlPolicyFor } from './sources/url-policy.ts';
import { registerSecretRoutes } from './secrets/routes.ts';
import { SecretService } from './secrets/service.ts';
import { startTableMaintenance } from './store/maintenance.ts';
import { registerWebhookManagementRoutes } from './factories/webhooks/routes.ts';
import { AutomationManagement } from './automations/management.ts';
import { WebhookManagement, teamWebhook } from './factories/webhooks/management.ts';
import { WorkerHub } from './workers/hub.ts';
import { registerWorkerConnectRoute, registerWorkerTokenRoutes } from './workers/routes.ts';
import { Loop } from './kernel/loop.ts';

/** The version the factory interface's MCP server reports. */
const FACTORY_INTERFACE_VERSION = '1.0.0';

/** How often runs whose tree passed its deadline are looked for. */
const TREE_DEADLINE_SWEEP_MS = 60_000;

/** What tests and benchmarks may change in how a server is built. */
export interface CompositionOptions {
  ingress?: IngressOptions;
  execution?: {
    /** Settings over those of the environment. */
    settings?: Partial<ExecutionSettings>;
    /** The environment to read settings from (default process.env). */
    env?: NodeJS.ProcessEnv;
    /** Told the runs of each claim of this process's executors as their executions begin (benchmarks). */
    onClaimed?: (runIds: string[]) => void;
  };
  /** The time the scheduler and the schedules API compute fires with, and reconcile retries wait by (tests pass a ManualClock). */
  clock?: Clock;
  /** The outbox evaluator's options; `false` runs none in this process (tests drive it themselves). */
  automations?: EvaluatorOptions | false;
  /** Route plugins registered after the service's own (tests). */
  plugins?: readonly RoutePlugin[];
  /** The run tree's limits over those of the environment (the factory interface). */
  orchestration?: { limits?: Partial<TreeLimits> };
  /** Scoring over the environment's settings (tests: the judge's endpoint, a short settle time). */
  scoring?: Partial<ScoringSettings>;
}

/**
 * Run execution in this process: the recorder, the engine's reaper, this host's workspace sweeper, the worker
 * hub, and the executor with that role.
 */
export interface ExecutionParts {
  settings: ExecutionSettings;
  recorder: ExecutionRecorder;
  reaper: Reaper;
  sweeper: WorkspaceSweeper;
  executor: ServiceExecutor | undefined;
  hub: WorkerHub;
  processId: string;
}

/** Every service of a server process. It is a ServiceContext too: code that needs only the kernel takes it as one. */
export interface Services extends ServiceContext {
  metrics: Metrics;
  /** Where secret values come from: the database, or what the operator installs with `secrets.use`. */
  secrets: ServerSecrets;
  /** Team secrets as the API and webhook management write them (encrypted at rest). */
  managedSecrets: SecretService;
  readiness: ReadinessChecks;
  /** Parses and validates factory trees on worker threads (applies and the dry-run validate endpoint). */
  definitions: DefinitionPool;
  /** The reconciler and the loops of every factory (they run only with the `controller` role). */
  controller: FactoryController;
  factories: FactoryService;
  runs: RunService;
  webhooks: WebhookManagement;
  automations: AutomationManagement;
  schedules: ScheduleService;
  /** Signs and checks the session links of runs. */
  sessionLinks: SessionLinks;
  /** The webhook ingress, with the `ingress` role. */
  ingress: IngressRuntime | undefined;
  /** The ingress's routing snapshot (webhook management refreshes it after a write), with the `ingress` role. */
  routing: IngressRuntime['routing'] | undefined;
  /** The outbox evaluator, with the `ingress` or `controller` role. */
  evaluator: OutboxEvaluator | undefined;
  /** Outbound provider work (pull request files, factory checks, Linear mentions), wherever the evaluator runs. */
  integrationJobs: IntegrationJobRunner | undefined;
  /** Scorers judging finished runs (with the ingress or controller role). */
  scoring: ScoringRunner | undefined;
  /** The schedule loop, with the `scheduler` role. */
  scheduler: Scheduler | undefined;
  scheduleSync: AutomationScheduleSync | undefined;
  execution: ExecutionParts;
  /** The factory interface (/api/v1/mcp/factory): dispatch, reports, questions and replies. */
  factoryInterface: FactoryInterface;
}

/** Something a process starts; the function it resolves to stops it. */
export interface Component {
  name: string;
  /** The roles it runs with; `every` runs in each process. */
  roles: readonly Role[] | 'every';
  start(): Promise<() => Promise<void>>;
}

export interface Composition {
  services: Services;
  /** The route plugins, in registration order. */
  plugins: readonly RoutePlugin[];
  /** Every component in start order (stopped in the reverse order). */
  components: readonly Component[];
  /** The components of a process with these roles, in start order. */
  startList(roles: ReadonlySet<Role>): readonly Component[];
}

/** Builds the services of one server over its kernel context; starts nothing. */
export function compose(ctx: ServiceContext, options: CompositionOptions = {}): Composition {
  const { config, db, bus, log } = ctx;
  const roles = config.roles;
  const clock = options.clock ?? systemClock;
  const metrics = createMetrics(db);
  const secrets = new ServerSecrets(db, ctx.cipher);
  const readiness = new ReadinessChecks(db);
  const definitions = new DefinitionPool(poolOptionsFor(config));
  const ingressOptions = {
    ...options.ingress,
    limits: { providerEventPoints: config.providerEventsPerMinute, ...options.ingress?.limits },
  };
  const ingress = roles.has('ingress') ? createIngressRuntime(ctx, metrics, ingressOptions) : undefined;
  // The senders locked out for failed authentications, as the bus announces them (GET …/lockouts).
  const lockouts = new AuthLockouts({ ...DEFAULT_INGRESS_LIMITS, ...ingressOptions.limits });
  const controller = new FactoryController(
    {
      db,
      bus,
      cipher: ctx.cipher,
      secrets,
      log,
      dataDir: config.dataDir,
      definitions,
      urlPolicy: sourceUrlPolicyFor(config),
      sourceLimits: config.sourceLimits,
      models: knownModels(config),
      routing: ingress?.routing,
    },
    { clock },
  );
  const connections = ingress ? new ConnectionCache(db, ctx.cipher, log) : undefined;
  const runs = new RunService(db, bus);
  const managed = { ...ctx, controller, routing: ingress?.routing };
  const factories = new FactoryService({ ...managed, runs });
  const managedSecrets = new SecretService(db, ctx.cipher);
  const webhooks = new WebhookManagement(managed, managedSecrets);
  const automations = new AutomationManagement(managed);
  const schedules = new ScheduleService(db, bus, clock);
  const evaluator =
    options.automations !== false && (roles.has('ingress') || roles.has('controller'))
      ? new OutboxEvaluator({ db, bus, log, runs, threads: chatContinuation(bus) }, options.automations ?? {})
      : undefined;
  const limits = treeLimits(options.execution?.env ?? process.env, options.orchestration?.limits);
  const factoryInterface = new FactoryInterface({
    db,
    bus,
    log,
    secrets,
    factories,
    runs,
    definitions,
    models: knownModels(config),
    limits,
  });
  const integrationJobs = evaluator
    ? new IntegrationJobRunner({
        db,
        bus,
        log,
        handlers: {
          pull_files: pullFilesHandler({ db, bus, secrets }),
          factory_check: factoryCheckHandler({ db, secrets, reconciler: controller.reconciler }),
          linear_mentions: linearMentionsHandler({ db, bus, secrets }),
        },
      })
    : undefined;
  const scoringSettings = { ...scoringSettingsFrom(options.execution?.env ?? process.env), ...options.scoring };
  const judge = new Judge(scoringSettings.judge);
  const benchmarks = new BenchmarkService({
    db,
    runs,
    judge,
    log,
    defaultJudgeModel: scoringSettings.judge.defaultModel,
  });
  const scoring =
    roles.has('ingress') || roles.has('controller')
      ? new ScoringRunner({
          benchmarks,
          db,
          bus,
          log,
          runs,
          metrics,
          judge,
          settleMs: scoringSettings.settleMs,
          pollIntervalMs: scoringSettings.pollIntervalMs,
          window: scoringSettings.window,
        })
      : undefined;
  const scheduler = roles.has('scheduler') ? new Scheduler({ db, bus, clock, log, runs }) : undefined;
  const scheduleSync = roles.has('scheduler') ? new AutomationScheduleSync({ db, bus, clock, log }) : undefined;

  const settings = executionSettings(config.dataDir, options.execution?.env ?? process.env, {
    serverUrl: () => config.publicUrl,
    ...(options.execution?.settings ?? {}),
  });
  settings.repositories = {
    ...settings.repositories,
    policy: settings.repositories.policy ?? sourceUrlPolicyFor(config),
  };
  const processId = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const recorder = new ExecutionRecorder(db, bus, log);
  const sessionLinks = sessionLinksFor(ctx);
  const execution: ExecutionParts = {
    settings,
    recorder,
    processId,
    hub: new WorkerHub({
      db,
      bus,
      log,
      authenticator: ctx.authenticator,
      recorder,
      secrets,
      sessionLink: sessionLinks.urlFor,
      factoryMcpUrl: () => factoryMcpUrl(config.publicUrl),
      serverId: processId,
      leaseMs: settings.leaseMs,
      heartbeatMs: settings.heartbeatMs,
      pollMs: settings.pollMs,
    }),
    reaper: new Reaper({ db, bus, log, intervalMs: settings.heartbeatMs }),
    sweeper: new WorkspaceSweeper({
      db,
      log,
      workspaceRoot: settings.workspaceRoot,
      workspaceRetentionMs: settings.workspaceRetentionMs,
      configRoot: settings.configRoot,
    }),
    executor: roles.has('executor')
      ? new ServiceExecutor({
          db,
          bus,
          log,
          settings,
          recorder,
          secrets,
          runs,
          sessionLink: sessionLinks.urlFor,
          factoryMcpUrl: () => factoryMcpUrl(config.publicUrl),
          processId,
          ...(options.execution?.onClaimed ? { onClaimed: options.execution.onClaimed } : {}),
        })
      : undefined,
  };

  const services: Services = {
    ...ctx,
    metrics,
    secrets,
    managedSecrets,
    readiness,
    definitions,
    controller,
    factories,
    runs,
    webhooks,
    automations,
    schedules,
    sessionLinks,
    ingress,
    routing: ingress?.routing,
    evaluator,
    integrationJobs,
    scoring,
    scheduler,
    scheduleSync,
    execution,
    factoryInterface,
  };

  // One plugin per domain, in the order their routes are registered (the OpenAPI document follows it), each
  // with the roles that serve it.
  const API: readonly Role[] = ['api'];
  const plugins: RoutePlugin[] = [
    {
      name: 'identity',
      roles: API,
      async api(app) {
        await registerIdentityRoutes(app, services);
        await registerAgentIdentityRoutes(app, services);
      },
    },
    {
      name: 'runs',
      roles: API,
      async api(app) {
        await registerRunRoutes(app, services, runs, authorizeRunSecrets);
        await registerFollowupListRoute(app, runs);
        await registerAttachmentRoutes(app, services, runs);
        await registerCatalogRoutes(app, services);
      },
      root: (app) => registerSessionPageRoute(app, services, sessionLinks),
    },
    { name: 'secrets', roles: API, api: (app) => registerSecretRoutes(app, services) },
    { name: 'factories', roles: API, api: (app) => registerFactoryRoutes(app, services) },
    { name: 'factory-files', roles: API, api: (app) => registerFactoryFileRoutes(app, services) },
    {
      name: 'ingress',
      roles: ['ingress'],
      async root(app) {
        if (ingress)
          await registerIngressRoutes(
            app,
            { ctx: services, ...ingress },
            { throughFastify: options.ingress?.throughFastify },
          );
      },
    },
    {
      name: 'scoring',
      roles: API,
      async api(app) {
        await registerScoringRoutes(app, services, benchmarks);
      },
    },
    {
      name: 'integrations',
      roles: API,
      async api(app) {
        await registerIntegrationRoutes(app, services);
        await registerProviderIdentityRoutes(app, services, secrets);
      },
    },
    {
      name: 'provider-events',
      roles: ['ingress'],
      async root(app) {
        if (ingress && connections)
          registerProviderEventRoutes(app, { ctx: services, ingress, limits: ingress.limits, connections });
      },
    },
    {
      name: 'automations',
      roles: API,
      async api(app) {
        await registerAutomationReadRoutes(app, services);
        await registerProviderTestRoute(app, services);
        await registerAutomationManagementRoutes(app, services);
      },
    },
    {
      name: 'delivery-log',
      roles: API,
      api: (app) =>
        registerDeliveryLogRoutes(app, {
          db,
          webhookOfTeam: async (teamId, uid) => (await teamWebhook(db, teamId, uid)).uid,
          connectionOfTeam: async (teamId, provider) =>
            (await teamConnection(services, teamId, providerOf(provider))).id,
          wakeEvaluator: () => bus.publish(DELIVERIES_ACCEPTED_TOPIC, null),
          lockouts: (logUid) => lockouts.of(logUid),
        }),
    },
    { name: 'factory-webhooks', roles: API, api: (app) => registerWebhookManagementRoutes(app, services) },
    { name: 'schedules', roles: API, api: (app) => registerScheduleRoutes(app, schedules, authorizeRunSecrets, db) },
    { name: 'health', root: (app) => registerHealthRoutes(app, services) },
    errorDocsPlugin,
    {
      name: 'execution',
      roles: API,
      async api(app) {
        await registerEventRoutes(app, services);
        await registerConversationRoutes(app, services);
        await registerWorkerRoutes(app, services, () => settings.heartbeatMs);
        await registerWorkerTokenRoutes(app, services);
      },
    },
    // Self-hosted workers connect to any process: the hub runs in each.
    { name: 'worker-connect', root: (app) => registerWorkerConnectRoute(app, execution.hub) },
    {
      name: 'factory-interface',
      api: (app) =>
        registerFactoryInterfaceRoutes(app, {
          db,
          authenticator: ctx.authenticator,
          factories,
          iface: factoryInterface,
          version: FACTORY_INTERFACE_VERSION,
          ownUrls: () => [config.publicUrl, config.webhookBaseUrl],
          allowedHosts: config.mcpAllowedHosts,
        }),
    },
    {
      name: 'console',
      roles: API,
      root: (app) =>
        consoleRoutes(app, {
          cipher: ctx.cipher,
          secureCookies: config.publicUrl.startsWith('https:'),
          publicUrl: () => config.publicUrl,
          transcript: (token) =>
            readTranscript(ctx.db, ctx.cipher, token).then(
              (t) => t.events,
              (err: unknown) => {
                if (isAppError(err) && err.code === 'resource_not_found') return undefined;
                throw err;
              },
            ),
        }),
    },
    ...(options.plugins ?? []),
  ];

  const stopNothing = async () => {};
  // Start order: the spawner, the definition pool, the table maintenance, identity, the reconcile loops, the ingress, the evaluator, the scheduler,
  // the metrics of reconcile outcomes, execution. Each stops in the reverse order.
  const components: Component[] = [
    {
      // Agents, git and other commands start from the spawner process; forked here, before the server serves, its
      // one fork delays no request (src/kernel/spawner-link.ts). The ingress and the scheduler start none.
      name: 'spawner',
      roles: ['api', 'controller', 'executor'],
      start: async () => {
        startSpawner();
        return stopNothing;
      },
    },
    {
      // Idle workers end on their own; stopping ends the busy ones too.
      name: 'definition-pool',
      roles: 'every',
      start: async () => () => definitions.close(),
    },
    {
      name: 'table-maintenance',
      roles: 'every',
      async start() {
        if (db.engine !== 'pglite' || config.pgliteMaintenanceSeconds <= 0) return stopNothing;
        return startTableMaintenance(db, log, { intervalMs: config.pgliteMaintenanceSeconds * 1000 });
      },
    },
    {
      // A revocation on another process (shared PostgreSQL) reaches this one through the bus: drop the cache.
      name: 'credential-revocations',
      roles: 'every',
      async start() {
        const unsubscribe = bus.subscribe(CREDENTIALS_REVOKED_TOPIC, () => ctx.authenticator.invalidateAll());
        return async () => unsubscribe();
      },
    },
    reconcileLoops(controller),
    {
      // `serve --factory DIR|GIT_URL` creates or re-points its factory, and reports its every apply on stderr as
      // `file:line:col` lines.
      name: 'startup-factory',
      roles: 'every',
      async start() {
        if (!config.factory) return stopNothing;
        const factory = await factories.ensureStartupFactory(config.factory);
        log.info({ factory_id: factory.id, name: factory.name }, `factory ${factory.name} follows ${config.factory}`);
        const stopReport = await reportStartupFactory(ctx, factory.id, (text) => process.stderr.write(text));
        return async () => stopReport();
      },
    },
    {
      name: 'ingress',
      roles: ['ingress'],
      start: async () => (ingress ? ingress.start() : stopNothing),
    },
    {
      name: 'auth-lockouts',
      roles: ['api'],
      start: async () => {
        lockouts.start(bus);
        return async () => lockouts.stop();
      },
    },
    {
      name: 'integration-connections',
      roles: ['ingress'],
      start: async () => {
        connections?.start(bus);
        return async () => connections?.stop();
      },
    },
    {
      name: 'delivery-retention',
      roles: 'every',
      start: async () => startDeliveryRetention(ctx, options.ingress?.retentionIntervalMs),
    },
    {
      // The ingress nodes produce the outbox and a controller node backs them up; SKIP LOCKED shares the work.
      name: 'outbox-evaluator',
      roles: ['ingress', 'controller'],
      async start() {
        if (!evaluator) return stopNothing;
        evaluator.start();
        return () => evaluator.stop();
      },
    },
    {
      name: 'integration-jobs',
      roles: ['ingress', 'controller'],
      async start() {
        if (!integrationJobs) return stopNothing;
        integrationJobs.start();
        return () => integrationJobs.stop();
      },
    },
    {
      // A child cannot outlive its root's deadline: active runs of a tree past it are cancelled.
      name: 'run-tree-deadlines',
      roles: ['executor'],
      async start() {
        const loop = new Loop({
          name: 'run tree deadlines',
          everyMs: TREE_DEADLINE_SWEEP_MS,
          atStart: false,
          pass: async () => {
            await cancelOverdue(db, bus, limits, clock.now());
          },
          onError: (err) => log.warn({ err }, 'cancelling the runs of trees past their deadline failed'),
        }).start();
        return () => loop.stop();
      },
    },
    {
      name: 'scoring',
      roles: ['ingress', 'controller'],
      async start() {
        if (!scoring) return stopNothing;
        if (!scoring.configured) log.info('scorers judge no run: no judge endpoint (AGENTYARD_OPENAI_BASE_URL)');
        scoring.start();
        return () => scoring.stop();
      },
    },
    {
      name: 'scheduler',
      roles: ['scheduler'],
      async start() {
        if (!scheduler || !scheduleSync) return stopNothing;
        await scheduleSync.start();
        scheduler.start();
        return async () => {
          await scheduleSync.stop();
          await scheduler.stop();
        };
      },
    },
    {
      name: 'reconcile-outcome-metrics',
      roles: 'every',
      start: async () => countReconcileOutcomes(ctx, metrics, controller),
    },
    {
      name: 'reaper-and-worker-hub',
      roles: 'every',
      async start() {
        execution.reaper.start();
        execution.sweeper.start();
        execution.hub.start();
        return async () => {
          await execution.hub.stop();
          await execution.sweeper.stop();
          await execution.reaper.stop();
        };
      },
    },
    {
      name: 'executor',
      roles: ['executor'],
      async start() {
        const { executor } = execution;
        if (!executor) return stopNothing;
        if (settings.harnesses.some((h) => h !== 'noop')) {
          const sandbox = await describeSandbox(settings.sandbox);
          log[sandbox.level](sandbox.message);
        }
        await executor.start();
        // runs that nothing here or anywhere can take say what they wait for
        const stopAnnotations = startWaitingAnnotations(ctx, settings.heartbeatMs);
        return async () => {
          stopAnnotations();
          await executor.stop();
        };
      },
    },
  ];

  return {
    services,
    // A process serves the routes of its roles: without `api`, neither the Run API nor the console.
    plugins: plugins.filter((p) => !p.roles || p.roles.some((role) => roles.has(role))),
    components,
    startList: (processRoles) =>
      components.filter((c) => c.roles === 'every' || c.roles.some((role) => processRoles.has(role))),
  };
}

/** The reconcile loops of every factory: with the `controller` role, or on the operator's lease holder. */
function reconcileLoops(controller: FactoryController): Component {
  return {
    name: 'reconcile-loops',
    roles: ['controller'],
    async start() {
      await controller.start();
      return () => controller.stop();
    },
  };
}

/** Starts the components in order; the function it resolves to stops them in the reverse order. */
export async function startInOrder(components: readonly Component[], log: Logger): Promise<() => Promise<void>> {
  const stops: (() => Promise<void>)[] = [];
  const stopAll = async (): Promise<void> => {
    for (const stop of stops.splice(0).reverse())
      await stop().catch((err: unknown) => log.error({ err }, 'stopping a component failed'));
  };
  try {
    for (const component of components) stops.push(await component.start());
  } catch (err) {
    // A component failing to start must not leave those before it running.
    await stopAll();
    throw err;
  }
  return stopAll;
}

// ---------------------------------------------------------------- the operator (`agentyard operator`)

/** Roles an operator replica runs only while it holds the Lease: they make the leader list below. */
export const OPERATOR_LEADER_ROLES: ReadonlySet<Role> = new Set(['controller', 'executor']);

/** The roles an operator replica's server runs on every replica (the ingress and the API, typically). */
export function operatorServerRoles(roles: ReadonlySet<Role>): ReadonlySet<Role> {
  return new Set([...roles].filter((role) => !OPERATOR_LEADER_ROLES.has(role)));
}

export interface OperatorOptions {
  clients: KubeClients;
  log: Logger;
  /** This replica's identity: the reporting instance of its Events. */
  identity: string;
  /** Secret each namespace team's first admin API key is written to; empty: none. */
  apiKeySecret: string;
  /** Every Factory is reconciled again this often. */
  resyncMs: number;
  /** Watch Factories (and run Jobs) of this namespace only; undefined: the whole cluster. */
  watchNamespace: string | undefined;
  jobs: JobSettings;
}

export interface OperatorComposition {
  /** What every replica starts after its server, in order (stopped in reverse before the server stops). */
  replicaList: readonly Component[];
  /**
   * What the replica holding the Lease starts, in order, when it takes it; stopped in reverse before the Lease
   * is let go. Losing the Lease stops the whole process (manager.ts).
   */
  leaderList: readonly Component[];
  /** Resolves once every controller the leader list started has ended on its own (crashed): give up the Lease. */
  leaderWorkEnded(): Promise<void>;
  /** The Factory controller and the Job executor while the leader list runs. */
  factories(): FactoryResourceController | undefined;
  jobs(): JobExecutor | undefined;
}

/**
 * The operator's parts over a server's services. Its modules load the Kubernetes client, so they are imported
 * here on demand: a plain server never loads them.
 */
export async function composeOperator(services: Services, options: OperatorOptions): Promise<OperatorComposition> {
  const [
    { EventRecorder },
    { FactoryResourceController },
    { JobExecutor },
    { NamespaceTeams },
    { KubernetesSecretProvider },
  ] = await Promise.all([
    import('./operator/events.ts'),
    import('./operator/factory-controller.ts'),
    import('./operator/job-executor.ts'),
    import('./operator/namespace-teams.ts'),
    import('./operator/secret-provider.ts'),
  ]);
  const { clients, log } = options;
  const { metrics } = services;
  const events = new EventRecorder(clients.core, log, options.identity);
  const teams = new NamespaceTeams({ db: services.db, core: clients.core, log, apiKeySecret: options.apiKeySecret });
  // The controllers of the current term: made when the leader list starts, dropped when it stops.
  let jobs: JobExecutor | undefined;
  let factories: FactoryResourceController | undefined;
  let running: Promise<void>[] = [];

  /** A controller that runs until its signal aborts, as a component: stopping aborts it and waits for it. */
  const controllerComponent = (
    name: string,
    create: () => { run(signal: AbortSignal): Promise<void> },
    drop: () => void,
  ): Component => ({
    name,
    roles: [...OPERATOR_LEADER_ROLES],
    async start() {
      const abort = new AbortController();
      const run = create()
        .run(abort.signal)
        .catch((err: unknown) => log.error({ err, controller: name }, 'a controller failed'));
      running.push(run);
      return async () => {
        abort.abort();
        await run;
        running = running.filter((r) => r !== run);
        drop();
      };
    },
  });

  const replicaList: Component[] = [
    {
      // Secret references of Factories' namespaces read Kubernetes Secrets; other teams keep the database's.
      name: 'kubernetes-secrets',
      roles: 'every',
      async start() {
        services.secrets.use(
          new KubernetesSecretProvider({
            core: clients.core,
            db: services.db,
            fallback: new DatabaseSecretProvider(services.db, services.cipher),
          }),
        );
        return async () => {};
      },
    },
    {
      name: 'leader-caches-readiness',
      roles: 'every',
      async start() {
        const remove = services.readiness.add('controllers', () => {
          const informers = [factories?.informer, ...(jobs?.informers() ?? [])];
          const down = informers.filter((i) => i && !i.synced).map((i) => i!.name);
          return down.length ? `leader caches not synced: ${down.join(', ')}` : undefined;
        });
        return async () => remove();
      },
    },
  ];

  // Start order: the reconcile loops (the Factory controller asks them to fetch), the Job executor, the Factory
  // controller (its finalizer deletes Jobs through the executor). Stopped in the reverse order.
  const leaderList: Component[] = [
    reconcileLoops(services.controller),
    controllerComponent(
      'job-executor',
      () =>
        (jobs = new JobExecutor({
          ctx: services,
          clients,
          settings: options.jobs,
          events,
          metrics,
          log,
          watchNamespace: options.watchNamespace,
        })),
      () => {
        jobs = undefined;
      },
    ),
    controllerComponent(
      'factory-controller',
      () =>
        (factories = new FactoryResourceController({
          ctx: services,
          clients,
          teams,
          events,
          metrics,
          log,
          ...(jobs ? { cleanup: jobs } : {}),
          resyncMs: options.resyncMs,
          watchNamespace: options.watchNamespace,
        })),
      () => {
        factories = undefined;
      },
    ),
  ];

  return {
    replicaList,
    leaderList,
    leaderWorkEnded: () => Promise.all(running).then(() => {}),
    factories: () => factories,
    jobs: () => jobs,
  };
}
