/**
 * The outbox evaluation of a provider connection's delivery: the events it means, the automations subscribed
 * to them for its team (and repository), each at most once for its first matching trigger.
 */
import { providerEvents } from '../definitions/provider-events.ts';
import type { ProviderEvent } from '../definitions/provider-events.ts';
import { matchesFilter } from '../definitions/trigger-match.ts';
import { policyRefusal, triggerPolicyOf } from '../definitions/trigger-policy.ts';
import { PULL_REQUEST_CHANGE_EVENTS } from '../definitions/triggers.ts';
import { parseJsonBody } from '../ingress/json-body.ts';
import { isProvider, RUN_SOURCE_OF } from '../integrations/model.ts';
import type { Provider } from '../integrations/model.ts';
import { upsertInstallation } from '../integrations/sql.ts';
import type { ConnectionNotes } from '../integrations/sql.ts';
import { changedFiles, enqueueFactoryChecks, pullRequestFacts } from '../integrations/pull-request-jobs.ts';
import { mentionedUsers } from '../integrations/linear-mentions.ts';
import { threadMetadata } from '../integrations/threads.ts';
import type { CreateRunInput } from '../runs/service.ts';
import type { Queryable } from '../kernel/db.ts';
import { EVENT_PAYLOAD_FILE, providerRunPrompt, providerRunTitle } from './envelope.ts';
import { providerSubscriptions } from './sql.ts';
import type { OutboxDelivery, ProviderSubscription } from './sql.ts';
import { subscribedRun } from './run-input.ts';
import { providerKey } from './concurrency.ts';
import type { FiringConcurrency } from './concurrency.ts';
import { concurrencyOf } from '../definitions/concurrency-key.ts';

/** A run to start for an automation (with its concurrency key), or the reason its factory's trigger policy lets none start. */
export type ProviderFiring =
  | { automationId: string; input: CreateRunInput; concurrency?: FiringConcurrency }
  | { automationId: string; skipped: string };

export interface ProviderEvaluation {
  firings: ProviderFiring[];
  /** Integration jobs this evaluation enqueued (the runners are told after the commit). */
  jobsQueued: number;
}

/** The pull request events whose filters take `paths` (docs/factory-files.md, "Triggers"). */
const PATHS_EVENTS = new Set(PULL_REQUEST_CHANGE_EVENTS);

/**
 * A subscription that filters on `key` and whose other keys match one of these events: its match waits for
 * what a job fetches for `key` (a pull request's files, the ids of mentioned users).
 */
function waitsOn(sub: ProviderSubscription, key: string, events: readonly ProviderEvent[]): boolean {
  if (!sub.filter[key]) return false;
  const { [key]: _, ...others } = sub.filter;
  return events.some((e) => e.event === sub.event && matchesFilter(others, e.facts));
}

/** The event header a provider sends the event type in (Slack and Linear name it in the body). */
export const EVENT_HEADER: Record<Provider, string> = { github: 'x-github-event', slack: '', linear: 'linear-event' };

function installationOf(payload: unknown): { id: number; login: string | null } | undefined {
  const p = payload as {
    installation?: { id?: unknown; account?: { login?: unknown } };
    repository?: { owner?: { login?: unknown } };
  } | null;
  const id = p?.installation?.id;
  if (typeof id !== 'number' || !Number.isSafeInteger(id)) return undefined;
  const login = p?.installation?.account?.login ?? p?.repository?.owner?.login;
  return { id, login: typeof login === 'string' ? login : null };
}

/**
 * Runs to start for one provider delivery (the caller claims each firing and inserts the run), and the jobs it
 * asks for. A pull request event that some trigger's `paths` filter waits on starts nothing yet: its changed
 * files are fetched by a job, which hands the delivery back to the outbox when it ends; likewise the user ids
 * of a Linear text's profile-link mentions for `mentioned_user_ids` filters.
 */
export async function providerFirings(
  tx: Queryable,
  delivery: OutboxDelivery,
  notes: ConnectionNotes,
): Promise<ProviderEvaluation> {
  const none = { firings: [], jobsQueued: 0 };
  const provider = delivery.provider;
  if (!provider || !isProvider(provider)) return none;
  const parsed = parseJsonBody(delivery.payload);
  if (!parsed) return none;
  const headerName = EVENT_HEADER[provider];
  const eventType = headerName ? delivery.headers[headerName] : undefined;
  const derived = providerEvents(provider, eventType, parsed.value);
  const received = new Date(delivery.received_at);
  notes.lastEvents.push({
    connectionId: delivery.webhook_uid,
    event: derived.events[0]?.event ?? eventType ?? 'event',
    at: received,
  });
  if (provider === 'github') {
    const installation = installationOf(parsed.value);
    if (installation) await upsertInstallation(tx, delivery.webhook_uid, installation.id, installation.login);
  }
  const pr = provider === 'github' && eventType === 'pull_request' ? pullRequestFacts(parsed.value) : undefined;
  const jobsQueued = pr ? await enqueueFactoryChecks(tx, delivery, pr) : 0;
  if (derived.events.length === 0) return { firings: [], jobsQueued };
  if (provider === 'github' && !derived.repository) return { firings: [], jobsQueued };
  const subs = await providerSubscriptions(tx, {
    teamId: delivery.team_id,
    provider,
    repository: provider === 'github' ? derived.repository! : '',
    events: [...new Set(derived.events.map((e) => e.event))],
  });
  // The trigger policy of each subscriber's factory: who caused the event may start its runs, or not.
  const refusals = new Map<string, string | undefined>();
  const refusalOf = (sub: ProviderSubscription): string | undefined => {
    if (!refusals.has(sub.factory_id))
      refusals.set(sub.factory_id, policyRefusal(triggerPolicyOf(sub.trigger_policy), derived.origin));
    return refusals.get(sub.factory_id);
  };
  const profiles = derived.mentionedProfiles ?? [];
  // Refused subscriptions never make a job fetch anything: a filter that would wait on a fetch counts as met.
  const skipped: ProviderFiring[] = [];
  for (const sub of subs) {
    const reason = refusalOf(sub);
    if (!reason || skipped.some((f) => f.automationId === sub.automation_id)) continue;
    const matches =
      derived.events.some((e) => e.event === sub.event && matchesFilter(sub.filter, e.facts)) ||
      (pr !== undefined && PATHS_EVENTS.has(sub.event) && waitsOn(sub, 'paths', derived.events)) ||
      (profiles.length > 0 && waitsOn(sub, 'mentioned_user_ids', derived.events));
    if (matches) skipped.push({ automationId: sub.automation_id, skipped: reason });
  }
  const allowed = subs.filter((sub) => !refusalOf(sub));
  const result = await allowedFirings(tx, delivery, notes, {
    provider,
    derived,
    pr,
    subs: allowed,
    payload: parsed.value,
  });
  return { firings: [...skipped, ...result.firings], jobsQueued: jobsQueued + result.jobsQueued };
}

/** The runs the allowed subscriptions start, after what their filters wait on has been fetched. */
async function allowedFirings(
  tx: Queryable,
  delivery: OutboxDelivery,
  notes: ConnectionNotes,
  routed: {
    provider: Provider;
    derived: ReturnType<typeof providerEvents>;
    pr: ReturnType<typeof pullRequestFacts>;
    subs: ProviderSubscription[];
    payload: unknown;
  },
): Promise<ProviderEvaluation> {
  const { provider, derived, pr, subs, payload } = routed;
  let events = derived.events;
  if (pr && subs.some((sub) => PATHS_EVENTS.has(sub.event) && waitsOn(sub, 'paths', events))) {
    const changed = await changedFiles(tx, delivery, pr);
    if ('waiting' in changed) return { firings: [], jobsQueued: changed.queued ? 1 : 0 };
    if (changed.error) notes.lastErrors.push({ connectionId: delivery.webhook_uid, message: changed.error });
    events = events.map((e) => (PATHS_EVENTS.has(e.event) ? { ...e, facts: { ...e.facts, paths: changed.files } } : e));
  }
  const profiles = derived.mentionedProfiles ?? [];
  if (profiles.length > 0 && subs.some((sub) => waitsOn(sub, 'mentioned_user_ids', events))) {
    const mentioned = await mentionedUsers(tx, delivery, profiles);
    if ('waiting' in mentioned) return { firings: [], jobsQueued: mentioned.queued ? 1 : 0 };
    events = events.map((e) => {
      const ids = e.facts.mentioned_user_ids;
      return ids ? { ...e, facts: { ...e.facts, mentioned_user_ids: [...new Set([...ids, ...mentioned.ids])] } } : e;
    });
  }
  const chosen = new Map<string, { sub: ProviderSubscription; event: string }>();
  for (const sub of subs) {
    if (chosen.has(sub.automation_id)) continue;
    const match = events.find((e) => e.event === sub.event && matchesFilter(sub.filter, e.facts));
    if (match) chosen.set(sub.automation_id, { sub, event: match.event });
  }
  const firings = [...chosen.values()].map(({ sub, event }) => {
    const { base, automation } = subscribedRun(sub);
    const envelope = { automation, provider, event, subject: derived.subject, deliveryId: delivery.id };
    const policy = concurrencyOf(sub.concurrency);
    return {
      automationId: sub.automation_id,
      ...(policy ? { concurrency: providerKey(policy, derived, event, payload) } : {}),
      input: {
        ...base,
        prompt: providerRunPrompt(envelope),
        title: providerRunTitle(envelope),
        source: RUN_SOURCE_OF[provider],
        deliveryId: delivery.id,
        // the event's signature was verified before it reached the outbox: its sender is who caused it
        ...(sub.credential_strategy === 'CREATOR' ? { actsAs: { provider, account: derived.sender ?? null } } : {}),
        metadata: {
          provider,
          provider_event: event,
          // As GitHub spells it (the routing key is lower-case): the token is asked for this repository.
          ...(derived.repository && derived.subject ? { repository: derived.subject } : {}),
          ...(derived.subject ? { subject: derived.subject } : {}),
          connection_id: delivery.webhook_uid,
          ...(sub.credential_strategy === 'CREATOR' ? { credential_strategy: 'CREATOR' } : {}),
          ...(derived.sender ? { sender: derived.sender } : {}),
          // the conversation the run answers in (reply, ask_user) and that continues it
          ...threadMetadata(provider, payload),
        },
        attachments: [
          { fileName: EVENT_PAYLOAD_FILE, mimeType: 'application/json', data: Buffer.from(delivery.payload) },
        ],
      },
    };
  });
  return { firings, jobsQueued: 0 };
}
