/**
 * Test filter: would this automation fire for this stored delivery? The same choice the evaluator makes
 * (firstMatchPerAutomation), explained: the webhook check (does a trigger select the delivery's webhook,
 * and can it still fire) and the payload check (does a trigger's payload filter match, and where not).
 */
import { matchPayloadFilter } from './payload-filter.ts';
import type { PayloadFilter } from './payload-filter.ts';

export interface WebhookTrigger {
  triggerIndex: number;
  webhookUid: string;
  payload: PayloadFilter | null;
}

export interface TestFilterInput {
  triggers: readonly WebhookTrigger[];
  delivery: { webhookUid: string; payload: unknown };
  /** The delivery's webhook now: its name, and whether it still exists. */
  webhook: { name: string; deleted: boolean };
}

export interface TestFilterResult {
  result: 'Would trigger' | 'Would not trigger';
  webhook_check: { passed: boolean; detail: string };
  payload_check: { passed: boolean; detail: string; trigger_index?: number; path?: string; reason?: string };
}

export function testFilter({ triggers, delivery, webhook }: TestFilterInput): TestFilterResult {
  const selecting = triggers.filter((t) => t.webhookUid === delivery.webhookUid);
  const hookName = `${webhook.name} (${delivery.webhookUid})`;
  let webhookCheck: TestFilterResult['webhook_check'];
  if (triggers.length === 0) webhookCheck = { passed: false, detail: 'the automation has no webhook trigger' };
  else if (selecting.length === 0) {
    webhookCheck = {
      passed: false,
      detail: `no trigger selects webhook ${hookName}; its webhook triggers select ${[...new Set(triggers.map((t) => t.webhookUid))].join(', ')}`,
    };
  } else if (webhook.deleted)
    webhookCheck = { passed: false, detail: `webhook ${hookName} was deleted: triggers selecting it never fire` };
  else webhookCheck = { passed: true, detail: `trigger ${selecting[0]!.triggerIndex + 1} selects webhook ${hookName}` };

  // With no trigger on this webhook, the filters of the others still say whether the payload would match.
  const candidates = selecting.length > 0 ? selecting : triggers;
  let payloadCheck: TestFilterResult['payload_check'] | undefined;
  for (const t of candidates) {
    if (t.payload === null) {
      payloadCheck = {
        passed: true,
        detail: `trigger ${t.triggerIndex + 1} has no payload filter: every delivery matches`,
        trigger_index: t.triggerIndex,
      };
      break;
    }
    const outcome = matchPayloadFilter(t.payload, delivery.payload);
    if (outcome.matched) {
      payloadCheck = {
        passed: true,
        detail: `the payload matches the filter of trigger ${t.triggerIndex + 1}`,
        trigger_index: t.triggerIndex,
      };
      break;
    }
    payloadCheck ??= {
      passed: false,
      detail: `the payload does not match the filter of trigger ${t.triggerIndex + 1} at ${outcome.path || '(the payload itself)'}: ${outcome.reason}`,
      trigger_index: t.triggerIndex,
      path: outcome.path,
      reason: outcome.reason,
    };
  }
  payloadCheck ??= { passed: false, detail: 'no trigger to check the payload against' };
  return {
    result: webhookCheck.passed && payloadCheck.passed ? 'Would trigger' : 'Would not trigger',
    webhook_check: webhookCheck,
    payload_check: payloadCheck,
  };
}
