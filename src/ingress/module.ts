import { DELIVERIES_ACCEPTED_TOPIC } from '../kernel/topics.ts';
import type { AppModule } from '../plugin.ts';
import type { ServiceContext } from '../context.ts';
import { metricsFor } from '../metrics/metrics.ts';
import { DeliveryWriter } from './delivery-writer.ts';
import { DeliveriesInProgress } from './in-progress.ts';
import { DEFAULT_INGRESS_LIMITS } from './limits.ts';
import type { IngressLimits } from './limits.ts';
import { IngressLimiters } from './rate-limits.ts';
import { purgeDeliveries } from './retention.ts';
import { registerIngressRoutes } from './routes.ts';
import { RoutingSnapshot } from './routing.ts';

export interface IngressOptions {
  limits?: Partial<IngressLimits>;
  /** How often old deliveries are purged (default 10 minutes). */
  retentionIntervalMs?: number;
}

interface IngressRuntime {
  routing: RoutingSnapshot;
  limiters: IngressLimiters;
  writer: DeliveryWriter;
  inProgress: DeliveriesInProgress;
}

// One runtime per running server (tests run several servers in one process).
const runtimes = new WeakMap<ServiceContext, IngressRuntime>();

/** Makes this process's routing snapshot see a factory's webhooks as they are now (after a management write). */
export async function refreshWebhookRouting(ctx: ServiceContext, factoryId: string): Promise<void> {
  await runtimes.get(ctx)?.routing.reloadFactory(factoryId);
}

export function createIngressModule(options: IngressOptions = {}): AppModule {
  const limits: IngressLimits = { ...DEFAULT_INGRESS_LIMITS, ...options.limits };
  const retentionIntervalMs = options.retentionIntervalMs ?? 10 * 60_000;

  return {
    name: 'ingress',
    async root(app, ctx) {
      if (!ctx.config.roles.has('ingress')) return;
      let _announce: NodeJS.Timeout | undefined;
      const metrics = metricsFor(ctx);
      const inProgress = new DeliveriesInProgress();
      const runtime: IngressRuntime = {
        routing: new RoutingSnapshot(ctx.db, ctx.cipher, ctx.log),
        limiters: new IngressLimiters(ctx.db, ctx.bus, limits),
        writer: new DeliveryWriter(ctx.db, ctx.log, {
          // At most one announcement per 20 ms, however many batches commit.
          onQueued: () => {
            _announce ??= setTimeout(() => {
              _announce = undefined;
              void ctx.bus.publish(DELIVERIES_ACCEPTED_TOPIC).catch(() => {});
            }, 20);
          },
          onLogged: (label, count) => metrics.webhookDeliveries.inc({ label }, count),
          inProgress: () => inProgress.count,
        }),
        inProgress,
      };
      runtimes.set(ctx, runtime);
      registerIngressRoutes(app, { ctx, limits, ...runtime });
    },
    async start(ctx) {
      const runtime = runtimes.get(ctx);
      if (runtime) await runtime.routing.start(ctx.bus);
      const purge = () =>
        void purgeDeliveries(ctx.db)
          .then((n) => n > 0 && ctx.log.info({ deliveries: n }, 'purged old webhook deliveries'))
          .catch((err: unknown) => ctx.log.error({ err }, 'purging old webhook deliveries failed'));
      const timer = setInterval(purge, retentionIntervalMs);
      timer.unref();
      return async () => {
        clearInterval(timer);
        if (!runtime) return;
        runtime.routing.stop();
        runtime.limiters.stop();
        await runtime.writer.drain();
      };
    },
  };
}

export const ingressModule = createIngressModule();
