import { randomBytes } from 'node:crypto';
import type { CoreV1Api, CoreV1Event, KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from '../kernel/log.ts';
import { apiMessage, requestOptions } from './kube.ts';

export type EventType = 'Normal' | 'Warning';

const COMPONENT = 'agentyard-operator';
/** The same event again within this window raises the count of the first one instead of adding another. */
const AGGREGATE_WINDOW_MS = 10 * 60_000;
const MAX_MESSAGE = 1024;

interface Recorded {
  name: string;
  namespace: string;
  count: number;
  at: number;
}

/**
 * Records core/v1 Events on objects, the way `kubectl describe` shows them. A repeat of the same
 * (object, type, reason, message) within ten minutes increments the existing Event's count. Recording
 * never throws: an Event is a courtesy, the status is the record.
 */
export class EventRecorder {
  readonly #core: CoreV1Api;
  readonly #log: Logger;
  readonly #instance: string;
  readonly #recent = new Map<string, Recorded>();

  constructor(core: CoreV1Api, log: Logger, instance: string) {
    this.#core = core;
    this.#log = log;
    this.#instance = instance;
  }

  async record(obj: KubernetesObject, type: EventType, reason: string, message: string): Promise<void> {
    const meta = obj.metadata ?? {};
    const namespace = meta.namespace ?? 'default';
    const text = message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 1)}…` : message;
    const key = `${meta.uid}\0${type}\0${reason}\0${text}`;
    const now = Date.now();
    this.#prune(now);
    const previous = this.#recent.get(key);
    try {
      if (previous) {
        previous.count += 1;
        previous.at = now;
        await this.#core.patchNamespacedEvent(
          { name: previous.name, namespace, body: { count: previous.count, lastTimestamp: new Date(now) } },
          requestOptions({ patch: 'merge', signal: AbortSignal.timeout(10_000) }),
        );
        return;
      }
      const name = `${meta.name}.${now.toString(16)}${randomBytes(2).toString('hex')}`;
      const body: CoreV1Event = {
        metadata: { name, namespace },
        involvedObject: {
          apiVersion: obj.apiVersion,
          kind: obj.kind,
          name: meta.name,
          namespace,
          uid: meta.uid,
          resourceVersion: meta.resourceVersion,
        },
        type,
        reason,
        message: text,
        source: { component: COMPONENT },
        reportingComponent: `agentyard.dev/${COMPONENT}`,
        reportingInstance: this.#instance.slice(0, 128),
        firstTimestamp: new Date(now),
        lastTimestamp: new Date(now),
        count: 1,
      };
      await this.#core.createNamespacedEvent(
        { namespace, body },
        requestOptions({ signal: AbortSignal.timeout(10_000) }),
      );
      this.#recent.set(key, { name, namespace, count: 1, at: now });
    } catch (err) {
      if (previous) this.#recent.delete(key);
      this.#log.warn(
        { err: apiMessage(err), reason },
        `cannot record event ${reason} on ${obj.kind} ${namespace}/${meta.name}`,
      );
    }
  }

  #prune(now: number): void {
    for (const [key, r] of this.#recent) if (now - r.at > AGGREGATE_WINDOW_MS) this.#recent.delete(key);
  }
}
