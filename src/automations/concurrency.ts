/**
 * An automation's `concurrency` when it fires (docs/governance.md, "Concurrency keys"): the key rendered over
 * the event, a `skip` decided before the run is created, and, in the same transaction after it, the key stored on
 * the run and the older runs of the key cancelled (`cancelRunning`). The limit itself is kept by the claim
 * (ay_concurrency_admit, src/engine/functions.sql), for every executor.
 */
import { renderKey, valueAt } from '../definitions/concurrency-key.ts';
import type { ConcurrencyPolicy } from '../definitions/concurrency-key.ts';
import type { DerivedEvents } from '../definitions/provider-events.ts';
import * as engine from '../engine/engine.ts';
import type { RunChange } from '../engine/announce.ts';
import type { Queryable } from '../kernel/db.ts';

/** A firing's policy and the key it rendered. */
export interface FiringConcurrency {
  policy: ConcurrencyPolicy;
  key: string;
}

/** The key of a webhook delivery: `{{payload.<path>}}` (or a bare `{{<path>}}`) is a field of its body. */
export function webhookKey(policy: ConcurrencyPolicy, body: unknown): FiringConcurrency {
  return { policy, key: renderKey(policy.key, (path) => valueAt(body, path[0] === 'payload' ? path.slice(1) : path)) };
}

/**
 * The key of a provider event: `{{repository}}` (GitHub: lower-case `owner/name`, as events are routed),
 * `{{event}}` (the trigger event), `{{subject}}`, `{{sender}}`; `{{payload.<path>}}` and any other path are
 * fields of the event's body.
 */
export function providerKey(
  policy: ConcurrencyPolicy,
  derived: Pick<DerivedEvents, 'repository' | 'subject' | 'sender'>,
  event: string,
  body: unknown,
): FiringConcurrency {
  const builtIns: Record<string, string | null | undefined> = {
    repository: derived.repository,
    event,
    subject: derived.subject,
    sender: derived.sender,
  };
  return {
    policy,
    key: renderKey(policy.key, (path) => {
      if (path.length === 1 && Object.hasOwn(builtIns, path[0]!)) return builtIns[path[0]!] ?? undefined;
      return valueAt(body, path[0] === 'payload' ? path.slice(1) : path);
    }),
  };
}

/** The key of a schedule's fire: `{{schedule}}` is the schedule's name; a fire has no other field. */
export function scheduleKey(policy: ConcurrencyPolicy, scheduleName: string): FiringConcurrency {
  return {
    policy,
    key: renderKey(policy.key, (path) => (path.length === 1 && path[0] === 'schedule' ? scheduleName : undefined)),
  };
}

export function heldMessage(key: string, limit: number): string {
  return `queued: concurrency key ${key} at limit ${limit}`;
}

/** `onNew: skip`, before the run is created: why the firing starts none, or undefined. */
export async function concurrencySkip(
  tx: Queryable,
  factoryId: string,
  c: FiringConcurrency,
): Promise<string | undefined> {
  if (c.policy.onNew !== 'skip') return undefined;
  const open = await engine.openKeyRuns(tx, factoryId, c.key);
  if (open.length < c.policy.limit) return undefined;
  return `skipped: concurrency key ${c.key} at limit ${c.policy.limit} (onNew: skip; ${open.length} run${open.length === 1 ? '' : 's'} of the key not ended: ${open
    .slice(0, 3)
    .map((r) => r.id)
    .join(', ')}${open.length > 3 ? ', …' : ''})`;
}

/**
 * After the run is created, in its transaction: stores its key and limit (with the message it waits with when
 * the key is full already) and, for `cancelRunning`, cancels the older runs of the key beyond `limit - 1`, newest
 * kept, each with the runs it started. Answers the runs cancelled, to announce after the commit.
 */
export async function applyConcurrency(
  tx: Queryable,
  run: { id: string },
  factoryId: string,
  c: FiringConcurrency,
): Promise<RunChange[]> {
  const { key, policy } = c;
  const older = (await engine.openKeyRuns(tx, factoryId, key)).filter((r) => r.id !== run.id);
  const superseded = policy.onNew === 'cancelRunning' ? older.slice(Math.max(0, policy.limit - 1)) : [];
  const remaining = older.length - superseded.length;
  await engine.setRunConcurrency(tx, run.id, {
    key,
    limit: policy.limit,
    heldMessage: remaining >= policy.limit ? heldMessage(key, policy.limit) : null,
  });
  const changes: RunChange[] = [];
  for (const old of superseded) {
    const moved = await engine.supersedeRunTree(
      tx,
      old.team_id,
      old.id,
      run.id,
      `cancelled by a newer run ${run.id} (concurrency key ${key})`,
      `Cancelled with its ancestor ${old.id}, superseded by the newer run ${run.id}`,
    );
    changes.push(...moved.map((m) => ({ id: m.id, state: m.state, worker_host: m.worker_host })));
  }
  return changes;
}
