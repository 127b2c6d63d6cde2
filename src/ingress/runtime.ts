import type { ServiceContext } from '../context.ts';
import { DELIVERIES_ACCEPTED_TOPIC, DELIVERIES_PURGED_TOPIC } from '../kernel/topics.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { DeliveryWriter } from './delivery-writer.ts';
import { DeliveriesInProgress } from './in-progress.ts';
import { DEFAULT_INGRESS_LIMITS } from './limits.ts';
import type { IngressLimits } from './limits.ts';
import { DeliveryBudgets, IngressLimiters } from './rate-limits.ts';
import { purgeDeliveries } from './retention.ts';
import { RoutingSnapshot } from './routing.ts';
import { Loop } from '../kernel/loop.ts';

export interface IngressOptions {
  limits?: Partial<IngressLimits>;
  /** How often old deliveries are purged (default 10 minutes). */
  retentionIntervalMs?: number;
  /**
   * Serve deliveries through a Fastify route instead of straight from node:http: for bench/ingress-plugin.ts,
   * which measures the two (docs/decisions.md, "The ingress answers from node:http").
   */
  throughFastify?: boolean;
}

/** The webhook ingress of a process with the `ingress` role: routing snapshot, rate limits, delivery writer. */
export interface IngressRuntime {
  limits: IngressLimits;
  routing: RoutingSnapshot;
  limiters: IngressLimiters;
  /** Provider events per connection (IngressLimits.providerEventPoints). */
  providerEvents: DeliveryBudgets;
  writer: DeliveryWriter;
  inProgress: DeliveriesInProgress;
  start(): Promise<() => Promise<void>>;
}

export function createIngressRuntime(
  ctx: ServiceContext,
  metrics: Metrics,
  options: IngressOptions = {},
): IngressRuntime {
  const limits: IngressLimits = { ...DEFAULT_INGRESS_LIMITS, ...options.limits };
  let _announce: NodeJS.Timeout | undefined;
  const inProgress = new DeliveriesInProgress();
  const routing = new RoutingSnapshot(ctx.db, ctx.cipher, ctx.log);
  const limiters = new IngressLimiters(ctx.db, ctx.bus, limits);
  const providerEvents = new DeliveryBudgets(
    ctx.db,
    'pev',
    limits.providerEventPoints,
    limits.providerEventWindowSeconds,
  );
  const writer = new DeliveryWriter(ctx.db, ctx.log, {
    // A second full group goes while one is in flight: on PGlite it waits on the thread, ready the moment the
    // first commits; on PostgreSQL it runs on a second connection (docs/decisions.md, "A second group waits").
    concurrency: 2,
    // At most one announcement per 20 ms, however many batches commit.
    onQueued: () => {
      _announce ??= setTimeout(() => {
        _announce = undefined;
        void ctx.bus.publish(DELIVERIES_ACCEPTED_TOPIC).catch(() => {});
      }, 20);
    },
    onLogged: (label, count) => metrics.webhookDeliveries.inc({ label }, count),
    inProgress: () => inProgress.count,
  });
  return {
    limits,
    routing,
    limiters,
    providerEvents,
    writer,
    inProgress,
    async start() {
      await routing.start(ctx.bus);
      return async () => {
        routing.stop();
        limiters.stop();
        providerEvents.stop();
        await writer.drain();
      };
    },
  };
}

/** Purges old deliveries every `intervalMs` (default 10 minutes), in every process; answers the stop. */
export function startDeliveryRetention(ctx: ServiceContext, intervalMs = 10 * 60_000): () => Promise<void> {
  const loop = new Loop({
    name: 'delivery retention',
    everyMs: intervalMs,
    atStart: false,
    pass: async () => {
      const n = await purgeDeliveries(ctx.db);
      if (n === 0) return;
      ctx.log.info({ deliveries: n }, 'purged old webhook deliveries');
      await ctx.bus.publish(DELIVERIES_PURGED_TOPIC, { deliveries: n });
    },
    onError: (err) => ctx.log.error({ err }, 'purging old webhook deliveries failed'),
  }).start();
  return () => loop.stop();
}
