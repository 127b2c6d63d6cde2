/**
 * Chat threads continue their runs (docs/orchestration.md): evaluated in the outbox's transaction, so a message
 * is one follow-up however often the provider delivers it (its delivery identity, and the message's own key),
 * and nothing is lost to a `kill -9`.
 *
 * - Slack: a message in a thread where a run of the connection started, replied or asked is a follow-up to
 *   that run (the one waiting BLOCKED first) and starts no run. Bot messages, ours included, are ignored.
 * - GitHub: a comment on the issue or pull request a BLOCKED run asked on resumes it; other comments match
 *   triggers as before.
 * - Linear: a comment on the issue, or an agent session's `prompted` event, continues the session's run.
 */
import type { Bus } from '../kernel/bus.ts';
import type { Queryable } from '../kernel/db.ts';
import type { ChatContinuation } from '../automations/evaluator.ts';
import type { OutboxDelivery } from '../automations/sql.ts';
import type { CreateRunInput } from '../runs/service.ts';
import { parseJsonBody } from '../ingress/json-body.ts';
import { isProvider } from '../integrations/model.ts';
import type { Provider } from '../integrations/model.ts';
import { chatMessage, threadKeysOf } from '../integrations/threads.ts';
import { announceResumed, linkThread, resumeWithFollowup, runsOfThread } from '../runs/tree.ts';

const WHO: Record<Provider, string> = { slack: 'Slack', github: 'GitHub', linear: 'Linear' };

/** The event name a provider sends in a header (Slack and Linear name theirs in the body). */
const EVENT_HEADER: Record<Provider, string | undefined> = {
  github: 'x-github-event',
  slack: undefined,
  linear: 'linear-event',
};

export function chatContinuation(bus: Bus): ChatContinuation {
  return {
    async continues(tx: Queryable, delivery: OutboxDelivery) {
      const provider = delivery.provider;
      if (!provider || !isProvider(provider)) return undefined;
      const parsed = parseJsonBody(delivery.payload);
      if (!parsed) return undefined;
      const header = EVENT_HEADER[provider];
      const message = chatMessage(provider, header ? delivery.headers[header] : undefined, parsed.value);
      if (!message?.inThread) return undefined;
      const linked = (await runsOfThread(tx, delivery.webhook_uid, message.threadKey)).filter(
        (r) => r.team_id === delivery.team_id,
      );
      // GitHub and Linear comments resume a run that asked there (BLOCKED), and Linear's continue an agent
      // session's run; any other comment matches triggers as before. Slack threads continue their runs.
      const candidates =
        provider === 'slack' ? linked : linked.filter((r) => r.state === 'BLOCKED' || r.agent_session !== null);
      const target = candidates.find((r) => r.state === 'BLOCKED') ?? candidates[0];
      if (!target) return undefined;
      // A bot's message (our own posts come back as events too) continues nothing and starts nothing.
      if (message.fromBot) return { announce: async () => {} };
      const resumed = await resumeWithFollowup(tx, {
        teamId: delivery.team_id,
        runId: target.id,
        message: `${message.author ? `${message.author} on ${WHO[provider]}` : `On ${WHO[provider]}`}: ${message.text}`,
        creatorId: null,
        providerMessageKey: message.messageKey,
      });
      return { announce: () => (resumed ? announceResumed(bus, [resumed]) : Promise.resolve()) };
    },
    async started(tx: Queryable, run: { id: string; team_id: string }, input: CreateRunInput) {
      const metadata = input.metadata ?? {};
      const connectionId = metadata.connection_id;
      const provider = metadata.provider;
      if (!connectionId || !provider || !isProvider(provider)) return;
      for (const threadKey of threadKeysOf(metadata))
        await linkThread(tx, { connectionId, threadKey, runId: run.id, teamId: run.team_id, provider });
    },
  };
}
