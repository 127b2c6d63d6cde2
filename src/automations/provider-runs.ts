/**
 * The outbox evaluation of a provider connection's delivery: the events it means, the automations subscribed
 * to them for its team (and repository), each at most once for its first matching trigger.
 */
import { providerEvents } from '../definitions/provider-events.ts';
import { matchesFilter } from '../definitions/trigger-match.ts';
import { parseJsonBody } from '../ingress/json-body.ts';
import { isProvider, RUN_SOURCE_OF } from '../integrations/model.ts';
import type { Provider } from '../integrations/model.ts';
import { recordLastEvents, upsertInstallation } from '../integrations/sql.ts';
import type { CreateRunInput } from '../runs/service.ts';
import type { Queryable } from '../kernel/db.ts';
import { EVENT_PAYLOAD_FILE, providerRunPrompt, providerRunTitle } from './envelope.ts';
import { providerSubscriptions } from './sql.ts';
import type { OutboxDelivery, ProviderSubscription } from './sql.ts';
import { automationRunBase } from './run-input.ts';

export interface ProviderFiring {
  automationId: string;
  input: CreateRunInput;
}

/** The event header a provider sends the event type in (Slack and Linear name it in the body). */
const EVENT_HEADER: Record<Provider, string> = { github: 'x-github-event', slack: '', linear: 'linear-event' };

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

/** Runs to start for one provider delivery (the caller claims each firing and inserts the run). */
export async function providerFirings(tx: Queryable, delivery: OutboxDelivery): Promise<ProviderFiring[]> {
  const provider = delivery.provider;
  if (!provider || !isProvider(provider)) return [];
  const parsed = parseJsonBody(delivery.payload);
  if (!parsed) return [];
  const headerName = EVENT_HEADER[provider];
  const eventType = headerName ? delivery.headers[headerName] : undefined;
  const derived = providerEvents(provider, eventType, parsed.value);
  const received = new Date(delivery.received_at);
  await recordLastEvents(tx, [
    { connectionId: delivery.webhook_uid, event: derived.events[0]?.event ?? eventType ?? 'event', at: received },
  ]);
  if (provider === 'github') {
    const installation = installationOf(parsed.value);
    if (installation) await upsertInstallation(tx, delivery.webhook_uid, installation.id, installation.login);
  }
  if (derived.events.length === 0) return [];
  if (provider === 'github' && !derived.repository) return [];
  const subs = await providerSubscriptions(tx, {
    teamId: delivery.team_id,
    provider,
    repository: provider === 'github' ? derived.repository! : '',
    events: [...new Set(derived.events.map((e) => e.event))],
  });
  const chosen = new Map<string, { sub: ProviderSubscription; event: string }>();
  for (const sub of subs) {
    if (chosen.has(sub.automation_id)) continue;
    const match = derived.events.find((e) => e.event === sub.event && matchesFilter(sub.filter, e.facts));
    if (match) chosen.set(sub.automation_id, { sub, event: match.event });
  }
  return [...chosen.values()].map(({ sub, event }) => {
    const envelope = {
      automation: { id: sub.automation_id, name: sub.automation_name, prompt: sub.prompt },
      provider,
      event,
      subject: derived.subject,
      deliveryId: delivery.id,
    };
    const automation = {
      id: sub.automation_id,
      name: sub.automation_name,
      team_id: sub.team_id,
      factory_id: sub.factory_id,
      config: sub.config,
    };
    return {
      automationId: sub.automation_id,
      input: {
        ...automationRunBase(automation, sub.agent_prompt),
        prompt: providerRunPrompt(envelope),
        title: providerRunTitle(envelope),
        source: RUN_SOURCE_OF[provider],
        deliveryId: delivery.id,
        metadata: {
          provider,
          provider_event: event,
          // As GitHub spells it (the routing key is lower-case): the token is asked for this repository.
          ...(derived.repository && derived.subject ? { repository: derived.subject } : {}),
          ...(derived.subject ? { subject: derived.subject } : {}),
          connection_id: delivery.webhook_uid,
          ...(sub.credential_strategy === 'CREATOR' ? { credential_strategy: 'CREATOR' } : {}),
          ...(derived.sender ? { sender: derived.sender } : {}),
        },
        attachments: [
          { fileName: EVENT_PAYLOAD_FILE, mimeType: 'application/json', data: Buffer.from(delivery.payload) },
        ],
      },
    };
  });
}
