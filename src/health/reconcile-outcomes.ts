import type { ServiceContext } from '../context.ts';
import { FACTORIES_CHANGED_TOPIC } from '../kernel/topics.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { factoryFailure } from './sql.ts';

/**
 * Counts the applies, refusals and fetch failures of the reconcile loops that run in this process (only those,
 * so that a sum over processes counts each once); answers the stop.
 */
export function countReconcileOutcomes(
  ctx: ServiceContext,
  metrics: Metrics,
  loops: { readonly runsLoops: boolean },
): () => Promise<void> {
  const unsubscribe = ctx.bus.subscribe(FACTORIES_CHANGED_TOPIC, (msg) => {
    if (msg?.event !== 'reconciled' || !msg.factory_id || !loops.runsLoops) return;
    if (msg.result === 'applied' || msg.result === 'unchanged') {
      metrics.applies.inc({ result: msg.result });
      return;
    }
    if (msg.result !== 'failed') return;
    void factoryFailure(ctx.db, msg.factory_id)
      .then((row) => {
        if (msg.revision) metrics.refusals.inc({ reason: row?.reason ?? 'Unknown' });
        else metrics.fetchFailures.inc({ reason: row?.source_error?.reason ?? 'Unknown' });
      })
      .catch(() => {});
  });
  return async () => unsubscribe();
}
