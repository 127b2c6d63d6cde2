/**
 * Published after every change to webhook or automation rows, by the reconciler, the webhook management API and
 * the factory service: `{factory_id}`. The ingress reloads its routes; the schedule sync re-reads the factory.
 */
export const WEBHOOKS_CHANGED_TOPIC = 'webhooks.changed';

/**
 * Published when a factory is created, deleted or re-pointed (`event`: created|deleted|updated) and after
 * every recorded reconcile (`event`: reconciled, with `result` and `revision`): `{factory_id, event, ...}`.
 * Controllers in other processes re-read the factory; the operator updates status from it.
 */
export const FACTORIES_CHANGED_TOPIC = 'factories.changed';

/** Asks the process that runs the factory's loops to fetch now: `{factory_id}` (from API-only nodes). */
export const FACTORY_SYNC_REQUESTED_TOPIC = 'factories.sync_requested';
