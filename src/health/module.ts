import { FACTORIES_CHANGED_TOPIC } from '../kernel/topics.ts';
import type { AppModule } from '../plugin.ts';
import { readiness } from './readiness.ts';
import { metricsFor } from '../metrics/metrics.ts';
import { controllerFor } from '../reconciler/index.ts';

/**
 * Readiness and Prometheus metrics for `serve` and `operator` (liveness, `/healthz`, is the app's own):
 * - `GET /readyz`: 200 when the database answers and every registered check passes (the operator leader's
 *   informer caches are synced), else 503 naming what is not ready;
 * - `GET /metrics`: the Prometheus text format.
 * It also counts the applies and refusals of the reconcile loops that run in this process.
 */
export const healthModule: AppModule = {
  name: 'health',
  async root(app, ctx) {
    app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
      const result = await readiness(ctx);
      return reply
        .code(result.ready ? 200 : 503)
        .send({ status: result.ready ? 'ok' : 'unavailable', checks: result.checks });
    });
    app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
      const { registry } = metricsFor(ctx);
      const text = await registry.metrics();
      return reply.type(registry.contentType).send(text);
    });
  },
  async start(ctx) {
    const metrics = metricsFor(ctx);
    const unsubscribe = ctx.bus.subscribe(FACTORIES_CHANGED_TOPIC, (data) => {
      const msg = data as { factory_id?: string; event?: string; result?: string; revision?: string } | null;
      // Count only the outcomes of loops running here, so that a sum over processes counts each once.
      if (msg?.event !== 'reconciled' || !msg.factory_id || !controllerFor(ctx).runsLoops) return;
      if (msg.result === 'applied' || msg.result === 'unchanged') {
        metrics.applies.inc({ result: msg.result });
        return;
      }
      if (msg.result !== 'failed') return;
      void ctx.db
        .query<{ reason: string | null; source_error: { reason?: string } | null }>(
          'SELECT reason, source_error FROM factories WHERE id = $1',
          [msg.factory_id],
        )
        .then((res) => {
          const row = res.rows[0];
          if (msg.revision) metrics.refusals.inc({ reason: row?.reason ?? 'Unknown' });
          else metrics.fetchFailures.inc({ reason: row?.source_error?.reason ?? 'Unknown' });
        })
        .catch(() => {});
    });
    return async () => unsubscribe();
  },
};
