/**
 * The user ids behind the profile names a Linear delivery's markdown mentions, for `mentioned_user_ids`
 * filters: looked up through @linear/sdk (`users`, by username or full name) with the connection's API key,
 * in a durable job off the outbox, as `paths` waits for a pull request's files. The delivery returns to the
 * outbox when the job ends, with the ids found, or with none (the connection's `last_error` says why).
 */
import { LinearClient, LinearError, LinearErrorType } from '@linear/sdk';
import type { Bus } from '../kernel/bus.ts';
import type { Queryable } from '../kernel/db.ts';
import type { SecretProvider } from '../secrets/provider.ts';
import { returnsDelivery } from './integration-jobs.ts';
import type { IntegrationJob, JobHandler, LinearMentionsInput } from './integration-jobs.ts';
import { linearApiUrl } from './name-resolver.ts';
import { connectionSettings, deliveryJob, enqueueIntegrationJob, recordLastError } from './sql.ts';

/** At most this many names of one delivery are looked up (one page of users). */
const MAX_NAMES = 50;

const RETRIED = new Set<string>([
  LinearErrorType.NetworkError,
  LinearErrorType.Ratelimited,
  LinearErrorType.InternalError,
  LinearErrorType.LockTimeout,
]);

interface DeliveryRef {
  id: string;
  team_id: string;
  /** The connection's id. */
  webhook_uid: string;
}

export type MentionedUsers =
  | { ids: readonly string[] }
  /** A job looks the names up; the delivery is evaluated again when it ends. */
  | { waiting: true; queued: boolean };

/** The ids of the mentioned profile names: from the delivery's ended job, or a job is enqueued for them. */
export async function mentionedUsers(
  tx: Queryable,
  delivery: DeliveryRef,
  names: readonly string[],
): Promise<MentionedUsers> {
  const job = await deliveryJob(tx, delivery.id, 'linear_mentions');
  if (job?.state === 'pending') return { waiting: true, queued: false };
  if (job) {
    const ids = job.result.ids;
    return { ids: Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string') : [] };
  }
  const input: LinearMentionsInput = { names: names.slice(0, MAX_NAMES) };
  await enqueueIntegrationJob(tx, {
    kind: 'linear_mentions',
    team_id: delivery.team_id,
    connection_id: delivery.webhook_uid,
    delivery_id: delivery.id,
    factory_id: '',
    input,
  });
  return { waiting: true, queued: true };
}

function fold(name: string): string {
  return name.trim().toLowerCase();
}

export function linearMentionsHandler(deps: {
  db: Queryable;
  bus: Bus;
  secrets: SecretProvider;
}): JobHandler<LinearMentionsInput> {
  return {
    async run(job, { final }) {
      const setting = (await connectionSettings(deps.db, job.connection_id))?.api_key_secret_name;
      if (!setting) return failed(deps.db, job, 'the Linear connection was deleted');
      const apiKey = await deps.secrets.get(job.team_id, setting);
      if (!apiKey) return failed(deps.db, job, `the managed secret ${setting} (the Linear API key) is missing`);
      const names = job.input.names;
      try {
        const client = new LinearClient({ apiKey: apiKey.trim(), apiUrl: linearApiUrl() });
        const users = await client.users({
          first: 100,
          includeDisabled: true,
          // Profile links keep the case the author typed; names compare without it.
          filter: {
            or: names.flatMap((n) => [{ displayName: { eqIgnoreCase: n } }, { name: { eqIgnoreCase: n } }]),
          },
        });
        const wanted = new Set(names.map(fold));
        const ids = users.nodes
          .filter((u) => wanted.has(fold(u.displayName)) || wanted.has(fold(u.name)))
          .map((u) => u.id);
        return { done: { ids } };
      } catch (err) {
        const type = err instanceof LinearError ? err.type : undefined;
        const message = err instanceof Error ? err.message : String(err);
        if ((type === undefined || RETRIED.has(type)) && !final) return { retry: message };
        return failed(deps.db, job, message);
      }
    },
    ...returnsDelivery(deps.bus),
  };
}

async function failed(db: Queryable, job: IntegrationJob<LinearMentionsInput>, reason: string) {
  const message = `users mentioned in delivery ${job.delivery_id} (${job.input.names.join(', ')}) not looked up: ${reason}; its mentioned_user_ids filters match only the ids the payload carries`;
  await recordLastError(db, job.connection_id, message);
  return { failed: message, result: { ids: [] } };
}
