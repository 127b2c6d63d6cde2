/**
 * `agentyard serve --factory DIR`: the local development loop. Every reconcile of that factory is reported
 * on stderr the way `agentyard validate` reports a tree — `file:line:col: severity code: message` lines and a
 * summary — so that an editor or a terminal can jump to the problem.
 */
import { formatText } from '../definitions/diagnostic.ts';
import type { ServiceContext } from '../context.ts';
import type { FactoryRow } from './apply/model.ts';
import * as sql from './apply/sql.ts';
import { FACTORIES_CHANGED_TOPIC } from '../kernel/topics.ts';

interface ReconciledEvent {
  factory_id?: string;
  event?: string;
}

/** The report of the factory's last attempt: diagnostics, then one summary line. */
export function formatAttempt(factory: FactoryRow): string {
  const errors = factory.errors.filter((d) => d.severity === 'error').length;
  const warnings = factory.errors.length - errors;
  const counts = `${errors} error${errors === 1 ? '' : 's'}, ${warnings} warning${warnings === 1 ? '' : 's'}`;
  const refused = factory.attempted_revision !== null && factory.attempted_revision !== factory.applied_revision;
  const summary = refused
    ? `factory ${factory.name}: refused ${factory.attempted_revision} (${counts}); ${factory.applied_revision ? `still serving ${factory.applied_revision}` : 'nothing applied yet'}`
    : `factory ${factory.name}: applied ${factory.applied_revision} (${counts})`;
  return `${formatText(factory.errors)}${summary}\n`;
}

/**
 * Writes each new attempt of the factory to `write` (stderr in `serve`); answers the unsubscribe. The attempt
 * already recorded when it starts is written too, once.
 */
export async function reportStartupFactory(
  ctx: ServiceContext,
  factoryId: string,
  write: (text: string) => void,
): Promise<() => void> {
  let last: string | undefined;
  const report = async (): Promise<void> => {
    const factory = await sql.getFactory(ctx.db, factoryId);
    if (!factory?.attempted_at) return;
    const key = `${factory.attempted_revision}@${factory.attempted_at.toISOString()}`;
    if (key === last) return;
    last = key;
    write(formatAttempt(factory));
  };
  let queue = Promise.resolve();
  const enqueue = () => {
    queue = queue.then(report).catch((err: unknown) => ctx.log.warn({ err }, 'could not report the factory'));
  };
  const unsubscribe = ctx.bus.subscribe(FACTORIES_CHANGED_TOPIC, (data) => {
    const event = data as ReconciledEvent;
    if (event.factory_id === factoryId && event.event === 'reconciled') enqueue();
  });
  enqueue();
  await queue;
  return unsubscribe;
}
