import type { Metrics } from '../metrics/metrics.ts';
import type { AppInstance } from '../plugin.ts';
import type { ReadinessChecks } from './readiness.ts';

/**
 * Readiness and Prometheus metrics for `serve` and `operator` (liveness, `/healthz`, is the app's own):
 * - `GET /readyz`: 200 when the database answers and every registered check passes (the operator leader's
 *   informer caches are synced), else 503 naming what is not ready;
 * - `GET /metrics`: the Prometheus text format.
 */
export async function registerHealthRoutes(
  app: AppInstance,
  deps: { readiness: ReadinessChecks; metrics: Metrics },
): Promise<void> {
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    const result = await deps.readiness.run();
    return reply
      .code(result.ready ? 200 : 503)
      .send({ status: result.ready ? 'ok' : 'unavailable', checks: result.checks });
  });
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    const { registry } = deps.metrics;
    const text = await registry.metrics();
    return reply.type(registry.contentType).send(text);
  });
}
