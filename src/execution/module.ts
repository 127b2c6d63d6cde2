/**
 * Run execution: the service's executors (in processes with the `executor` role), the reaper (in every
 * process), self-hosted workers over WebSocket, and the routes for events, conversations, transcripts and
 * workers.
 */
import { RUNS_QUEUED_TOPIC } from '../kernel/topics.ts';
import { sessionLinksFor } from '../runs/session-link.ts';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { AppModule } from '../plugin.ts';
import type { ServiceContext } from '../context.ts';
import { registerConversationRoutes } from '../runs/conversation-routes.ts';
import { registerEventRoutes } from '../runs/events-routes.ts';
import { delegatingSecretProvider } from '../secrets/provider.ts';
import { WorkerHub } from '../workers/hub.ts';
import { WORKER_CONNECT_PATH } from '../workers/protocol.ts';
import { ServiceExecutor } from './executor.ts';
import { Reaper } from './reaper.ts';
import { ExecutionRecorder } from './recorder.ts';
import { registerWorkerRoutes } from './routes.ts';
import { describeSandbox } from './sandbox/index.ts';
import { executionSettings } from './settings.ts';
import type { ExecutionSettings } from './settings.ts';
import { annotateWaitingRuns, PRESENCE_HEARTBEATS } from './waiting.ts';

export interface ExecutionModuleOptions {
  /** Settings over those of the environment (tests). */
  settings?: Partial<ExecutionSettings>;
  /** The environment to read settings from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Called with the parts once they run (tests). */
  onStarted?: (parts: ExecutionParts) => void;
  /** Told the runs of each claim of this process's executors as their executions begin (benchmarks). */
  onClaimed?: (runIds: string[]) => void;
}

export interface ExecutionParts {
  settings: ExecutionSettings;
  recorder: ExecutionRecorder;
  reaper: Reaper;
  executor: ServiceExecutor | undefined;
  hub: WorkerHub;
  processId: string;
}

interface State {
  settings: ExecutionSettings;
  recorder: ExecutionRecorder;
  hub: WorkerHub;
  processId: string;
}

const WAITING_EVERY_MS = 2_000;

export function createExecutionModule(options: ExecutionModuleOptions = {}): AppModule {
  // one module object may serve several servers in a process (tests): state is per server
  const states = new WeakMap<ServiceContext, State>();
  const stateOf = (ctx: ServiceContext): State => {
    let state = states.get(ctx);
    if (!state) {
      const settings = executionSettings(ctx.config.dataDir, options.env ?? process.env, options.settings ?? {});
      const processId = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
      const recorder = new ExecutionRecorder(ctx.db, ctx.bus, ctx.log);
      const hub = new WorkerHub({
        db: ctx.db,
        bus: ctx.bus,
        log: ctx.log,
        authenticator: ctx.authenticator,
        recorder,
        secrets: delegatingSecretProvider(ctx),
        sessionLink: sessionLinksFor(ctx).urlFor,
        serverId: processId,
        leaseMs: settings.leaseMs,
        heartbeatMs: settings.heartbeatMs,
        pollMs: settings.pollMs,
      });
      state = { settings, recorder, hub, processId };
      states.set(ctx, state);
    }
    return state;
  };

  return {
    name: 'execution',
    async api(app, ctx) {
      await registerEventRoutes(app, ctx);
      await registerConversationRoutes(app, ctx);
      await registerWorkerRoutes(app, ctx, () => stateOf(ctx).settings.heartbeatMs);
    },
    async root(app, ctx) {
      const { hub } = stateOf(ctx);
      const server = app.server;
      server.on('upgrade', (request, socket, head) => {
        const path = (request.url ?? '').split('?')[0];
        if (path === WORKER_CONNECT_PATH) return hub.handleUpgrade(request, socket, head);
        if (server.listenerCount('upgrade') === 1) socket.destroy();
      });
    },
    async start(ctx) {
      const { settings, recorder, hub, processId } = stateOf(ctx);
      const reaper = new Reaper({
        db: ctx.db,
        bus: ctx.bus,
        log: ctx.log,
        intervalMs: settings.heartbeatMs,
        workspaceRoot: settings.workspaceRoot,
        workspaceRetentionMs: settings.workspaceRetentionMs,
      });
      reaper.start();
      hub.start();
      let executor: ServiceExecutor | undefined;
      const timers: NodeJS.Timeout[] = [];
      const unsubscribe: (() => void)[] = [];
      if (ctx.config.roles.has('executor')) {
        if (settings.harnesses.some((h) => h !== 'noop')) {
          const sandbox = await describeSandbox(settings.sandbox);
          ctx.log[sandbox.level](sandbox.message);
        }
        executor = new ServiceExecutor({
          db: ctx.db,
          bus: ctx.bus,
          log: ctx.log,
          settings,
          recorder,
          secrets: delegatingSecretProvider(ctx),
          sessionLink: sessionLinksFor(ctx).urlFor,
          processId,
          ...(options.onClaimed ? { onClaimed: options.onClaimed } : {}),
        });
        await executor.start();
        // runs that nothing here or anywhere can take say what they wait for
        let _pending: NodeJS.Timeout | undefined;
        const annotate = () => {
          _pending = undefined;
          void annotateWaitingRuns(ctx.db, settings.heartbeatMs * PRESENCE_HEARTBEATS).catch((err: unknown) =>
            ctx.log.debug({ err }, 'annotating waiting runs failed'),
          );
        };
        const t = setInterval(annotate, WAITING_EVERY_MS);
        t.unref();
        timers.push(t);
        unsubscribe.push(
          ctx.bus.subscribe(RUNS_QUEUED_TOPIC, () => {
            _pending ??= setTimeout(annotate, 250).unref();
          }),
        );
      }
      options.onStarted?.({ settings, recorder, reaper, executor, hub, processId });
      return async () => {
        for (const t of timers) clearInterval(t);
        for (const u of unsubscribe) u();
        await hub.stop();
        await executor?.stop();
        await reaper.stop();
      };
    },
  };
}

export const executionModule = createExecutionModule();
