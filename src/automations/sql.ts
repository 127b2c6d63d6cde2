/** SQL of the outbox evaluation: claiming accepted deliveries, finding subscribers, recording firings. */
import type { FilterMatcher } from '../definitions/model.ts';
import type { PayloadFilter } from './payload-filter.ts';
import type { AutomationRow } from '../factories/apply/model.ts';
import type { ProviderTriggerRow } from './provider-test.ts';
import type { Queryable } from '../kernel/db.ts';
import { AUTOMATION_AGENT_PROMPT_SQL, AUTOMATION_CONCURRENCY_SQL } from './run-input.ts';

export interface OutboxDelivery {
  id: string;
  webhook_uid: string;
  webhook_name: string;
  team_id: string;
  factory_id: string;
  payload: Uint8Array;
  /** Set for a provider connection's delivery (webhook_uid is then the connection's id). */
  provider: string | null;
  headers: Record<string, string>;
  received_at: Date;
}

/** Accepted deliveries awaiting evaluation, oldest first, locked; rows another process holds are skipped. */
export async function claimOutbox(q: Queryable, limit: number): Promise<OutboxDelivery[]> {
  const res = await q.query<OutboxDelivery>(
    `SELECT id, webhook_uid, webhook_name, team_id, factory_id, payload, provider, headers, received_at FROM webhook_deliveries
      WHERE outbox_pending ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`,
    [limit],
  );
  return res.rows;
}

export async function markEvaluated(q: Queryable, deliveryIds: readonly string[]): Promise<void> {
  await q.query(
    'UPDATE webhook_deliveries SET outbox_pending = false, evaluated_at = ay_now() WHERE id = ANY($1::text[])',
    [deliveryIds],
  );
}

/** The automation's columns a run needs, as a trigger's subscription row carries them. */
export type SubscribedAutomation = Pick<AutomationRow, 'team_id' | 'factory_id' | 'prompt' | 'agent' | 'config'> & {
  automation_id: string;
  automation_name: string;
  /** The prompt of the agent the automation runs (the run's base prompt), from the applied definition. */
  agent_prompt: string | null;
  /** The automation's `concurrency` as applied (null: none). */
  concurrency: unknown;
};

/** A webhook trigger of an automation. */
export type Subscription = SubscribedAutomation & {
  webhook_uid: string;
  trigger_index: number;
  payload_filter: PayloadFilter | null;
};

/** Webhook triggers of enabled, live automations on these webhooks, in trigger order per automation. */
export async function subscriptions(q: Queryable, webhookUids: readonly string[]): Promise<Subscription[]> {
  const res = await q.query<Subscription>(
    `SELECT t.webhook_uid, t.trigger_index, t.payload_filter, a.id AS automation_id, a.name AS automation_name, a.team_id,
            a.factory_id, a.prompt, a.agent, a.config, ${AUTOMATION_AGENT_PROMPT_SQL} AS agent_prompt,
            ${AUTOMATION_CONCURRENCY_SQL} AS concurrency
       FROM automation_webhook_triggers t JOIN automations a ON a.id = t.automation_id JOIN factories f ON f.id = a.factory_id
      WHERE t.webhook_uid = ANY($1::text[]) AND a.enabled AND a.deleted_at IS NULL
      ORDER BY a.id, t.trigger_index`,
    [webhookUids],
  );
  return res.rows;
}

/** Claims the (delivery, automation) pair; false when it has fired already (another process, or before a crash). */
export async function claimFiring(q: Queryable, deliveryId: string, automationId: string): Promise<boolean> {
  const res = await q.query(
    'INSERT INTO automation_firings (delivery_id, automation_id) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING automation_id',
    [deliveryId, automationId],
  );
  return res.rows.length === 1;
}

export async function recordFiring(
  q: Queryable,
  deliveryId: string,
  automationId: string,
  outcome: { runId: string } | { error: string } | { skipped: string },
): Promise<void> {
  await q.query(
    'UPDATE automation_firings SET run_id = $3, error = $4, skipped = $5 WHERE delivery_id = $1 AND automation_id = $2',
    [
      deliveryId,
      automationId,
      'runId' in outcome ? outcome.runId : null,
      'error' in outcome ? outcome.error : null,
      'skipped' in outcome ? outcome.skipped : null,
    ],
  );
}

/** A provider trigger of an enabled, live automation. */
export type ProviderSubscription = SubscribedAutomation & {
  trigger_index: number;
  event: string;
  filter: Record<string, FilterMatcher>;
  /** The automation's agent's `credentialStrategy`, else the factory's; null: neither says (EXECUTOR). */
  credential_strategy: string | null;
  /** The factory's `triggerPolicy` as applied (null: none written, or applied before the key existed). */
  trigger_policy: unknown;
};

/** The automations subscribed to these events of a provider, for a team and (GitHub) repository: one index scan. */
export async function providerSubscriptions(
  q: Queryable,
  route: { teamId: string; provider: string; repository: string; events: readonly string[] },
): Promise<ProviderSubscription[]> {
  const res = await q.query<ProviderSubscription>(
    `SELECT t.automation_id, t.trigger_index, t.event, t.filter, a.name AS automation_name, a.team_id, a.factory_id,
            a.prompt, a.agent, a.config, ${AUTOMATION_AGENT_PROMPT_SQL} AS agent_prompt,
            ${AUTOMATION_CONCURRENCY_SQL} AS concurrency,
            coalesce((SELECT ag->>'credentialStrategy' FROM jsonb_array_elements(
               CASE WHEN jsonb_typeof(f.definition->'agents') = 'array' THEN f.definition->'agents' ELSE '[]'::jsonb END) ag
              WHERE ag->>'name' = coalesce(a.agent, f.definition->>'foreman') LIMIT 1),
              f.definition->'factory'->>'credentialStrategy') AS credential_strategy,
            f.definition->'factory'->'triggerPolicy' AS trigger_policy
       FROM automation_provider_triggers t JOIN automations a ON a.id = t.automation_id JOIN factories f ON f.id = a.factory_id
      WHERE t.team_id = $1 AND t.provider = $2 AND t.repository = $3 AND t.event = ANY($4::text[])
        AND a.enabled AND a.deleted_at IS NULL AND f.deleted_at IS NULL
      ORDER BY a.id, t.trigger_index`,
    [route.teamId, route.provider, route.repository, route.events],
  );
  return res.rows;
}

/**
 * Every provider trigger of the team's live automations for one provider (each GitHub trigger once per
 * repository it routes), with its automation and factory, for explaining a delivery (provider-test.ts).
 */
export async function teamProviderTriggers(
  q: Queryable,
  teamId: string,
  provider: string,
): Promise<ProviderTriggerRow[]> {
  const res = await q.query<ProviderTriggerRow>(
    `SELECT t.automation_id, a.name AS automation_name, a.factory_id, f.name AS factory_name, a.enabled,
            t.trigger_index, t.event, t.repository, t.filter, f.definition->'factory'->'triggerPolicy' AS trigger_policy
       FROM automation_provider_triggers t JOIN automations a ON a.id = t.automation_id JOIN factories f ON f.id = a.factory_id
      WHERE t.team_id = $1 AND t.provider = $2 AND a.deleted_at IS NULL AND f.deleted_at IS NULL
      ORDER BY f.name, a.name, a.id, t.trigger_index, t.repository
      LIMIT 5000`,
    [teamId, provider],
  );
  return res.rows;
}

/** A stored delivery of a connection's log with what its evaluation reads (a duplicate: its original's payload). */
export async function connectionDelivery(
  q: Queryable,
  teamId: string,
  connectionId: string,
  deliveryId: string,
): Promise<{ id: string; label: string; headers: Record<string, string>; payload: Uint8Array | null } | undefined> {
  const res = await q.query<{ id: string; label: string; headers: Record<string, string>; payload: Uint8Array | null }>(
    `SELECT d.id, d.label, coalesce(d.headers, '{}'::jsonb) AS headers, COALESCE(d.payload, o.payload) AS payload
       FROM webhook_deliveries d LEFT JOIN webhook_deliveries o ON o.id = d.duplicate_of
      WHERE d.id = $1 AND d.team_id = $2 AND d.webhook_uid = $3`,
    [deliveryId, teamId, connectionId],
  );
  return res.rows[0];
}
