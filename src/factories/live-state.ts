/**
 * The one way a change to a factory's live webhooks or automations is made known after its commit: the bus
 * tells every process (the ingress routes reload that factory, the schedule sync runs); in a process with the
 * `ingress` role, the caller also waits for its own routes, so that whoever asked finds them in force.
 */
import type { Bus } from '../kernel/bus.ts';
import { WEBHOOKS_CHANGED_TOPIC } from '../kernel/topics.ts';

/** This process's ingress routes: `settled` answers once the reloads asked so far are done. */
export interface LiveRoutes {
  settled(): Promise<void>;
}

export async function announceLiveChange(
  deps: { bus: Bus; routing?: LiveRoutes | undefined },
  factoryId: string,
): Promise<void> {
  // The routes subscribe to the topic: publishing queues their one reload of the factory, which `settled` awaits.
  await deps.bus.publish(WEBHOOKS_CHANGED_TOPIC, { factory_id: factoryId });
  await deps.routing?.settled();
}
