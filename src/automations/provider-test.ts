/**
 * Would this automation start a run for this stored provider delivery? The evaluator's choice
 * (provider-runs.ts) explained per automation: the event check (does a trigger take one of the events the
 * delivery means, from its repository), the filter check (the first filter key that does not match, with the
 * event's values and the filter's), and the factory's trigger policy. Pure.
 */
import type { FilterMatcher } from '../definitions/model.ts';
import type { DerivedEvents } from '../definitions/provider-events.ts';
import { matchesKey } from '../definitions/trigger-match.ts';
import { policyRefusal, triggerPolicyOf } from '../definitions/trigger-policy.ts';

export interface ProviderTriggerRow {
  automation_id: string;
  automation_name: string;
  factory_id: string;
  factory_name: string;
  enabled: boolean;
  trigger_index: number;
  event: string;
  /** GitHub: the lower-case repository the row routes; '' for Slack and Linear. */
  repository: string;
  filter: Record<string, FilterMatcher>;
  trigger_policy: unknown;
}

export interface Check {
  passed: boolean;
  detail: string;
  trigger_index?: number;
  /** The filter key that did not match: `filter.<key>`. */
  path?: string;
}

export interface ProviderTestResult {
  automation_id: string;
  automation_name: string;
  factory_id: string;
  factory_name: string;
  result: 'Would trigger' | 'Would not trigger';
  event_check: Check;
  filter_check: Check;
  /** Why the factory's trigger policy starts no run for who caused the event, when it does not. */
  policy?: string;
}

/** Filter keys whose values a job fetches after the event arrives (not in the payload). */
const FETCHED: Record<string, string> = {
  paths: "the pull request's changed files are fetched when the event is evaluated",
  mentioned_user_ids: 'the ids of users mentioned by profile link are looked up when the event is evaluated',
};

const list = (values: readonly (string | number)[] | undefined) =>
  values && values.length > 0 ? values.map((v) => JSON.stringify(v)).join(', ') : 'none';

/** The first key of `filter` the facts do not match, explained; undefined when every key matches. */
function filterMiss(
  filter: Record<string, FilterMatcher>,
  facts: Readonly<Record<string, readonly (string | number)[]>>,
): { key: string; detail: string } | undefined {
  for (const [key, matcher] of Object.entries(filter)) {
    const values = facts[key];
    if (values === undefined && FETCHED[key]) continue;
    if (matchesKey(key, matcher, values ?? [])) continue;
    const wants = [
      matcher.in ? `one of ${list(matcher.in)}` : '',
      matcher.not_in ? `none of ${list(matcher.not_in)}` : '',
    ]
      .filter(Boolean)
      .join(' and ');
    return { key, detail: `the event's ${key} are ${list(values)}; the filter wants ${wants}` };
  }
  return undefined;
}

/** Each automation with a trigger of the delivery's provider, tested against the events the delivery means. */
export function testProviderDelivery(
  provider: string,
  rows: readonly ProviderTriggerRow[],
  derived: DerivedEvents,
): ProviderTestResult[] {
  // As the evaluator: a GitHub event that names no repository reaches no automation.
  const unrouted = provider === 'github' && derived.repository === null;
  const byAutomation = new Map<string, ProviderTriggerRow[]>();
  for (const row of rows) {
    const group = byAutomation.get(row.automation_id);
    if (group) group.push(row);
    else byAutomation.set(row.automation_id, [row]);
  }
  const meant = [...new Set(derived.events.map((e) => e.event))];
  const meaning = meant.length > 0 ? meant.map((e) => `\`${e}\``).join(', ') : 'no trigger event';
  const out: ProviderTestResult[] = [];
  for (const triggers of byAutomation.values()) {
    const first = triggers[0]!;
    const head = {
      automation_id: first.automation_id,
      automation_name: first.automation_name,
      factory_id: first.factory_id,
      factory_name: first.factory_name,
    };
    // The routes of this event: the triggers on its repository (GitHub) that take one of its events.
    const routed = unrouted
      ? []
      : triggers.filter(
          (t) => (derived.repository === null || t.repository === derived.repository) && meant.includes(t.event),
        );
    let eventCheck: Check;
    if (unrouted) eventCheck = { passed: false, detail: 'the event names no repository, so no trigger takes it' };
    else if (routed.length === 0) {
      const takes = [...new Set(triggers.map((t) => t.event))].map((e) => `\`${e}\``).join(', ');
      const onRepo = triggers.some((t) => meant.includes(t.event));
      eventCheck = {
        passed: false,
        detail:
          onRepo && derived.repository !== null
            ? `no trigger takes events from repository ${derived.subject ?? derived.repository}; its triggers take ${[...new Set(triggers.map((t) => t.repository))].join(', ')}`
            : `its triggers take ${takes}; this delivery means ${meaning}`,
      };
    } else {
      const t = routed[0]!;
      eventCheck = {
        passed: true,
        detail: `trigger ${t.trigger_index + 1} takes \`${t.event}\`${t.repository ? ` from ${t.repository}` : ''}`,
        trigger_index: t.trigger_index,
      };
    }
    let filterCheck: Check | undefined;
    for (const t of routed) {
      const misses = derived.events
        .filter((e) => e.event === t.event)
        .map((e) => ({
          miss: filterMiss(t.filter, e.facts),
          fetched: Object.keys(t.filter).filter((k) => FETCHED[k] && e.facts[k] === undefined),
        }));
      const hit = misses.find((m) => m.miss === undefined);
      if (hit) {
        const keys = Object.keys(t.filter);
        filterCheck = {
          passed: true,
          detail:
            keys.length === 0
              ? `trigger ${t.trigger_index + 1} has no filter: every \`${t.event}\` event matches`
              : `the event matches the filter of trigger ${t.trigger_index + 1}${hit.fetched.length ? ` (not checked here: ${hit.fetched.map((k) => FETCHED[k]).join('; ')})` : ''}`,
          trigger_index: t.trigger_index,
        };
        break;
      }
      const miss = misses[0]?.miss;
      if (miss && !filterCheck) {
        filterCheck = {
          passed: false,
          detail: `the event does not match the filter of trigger ${t.trigger_index + 1} at ${miss.key}: ${miss.detail}`,
          trigger_index: t.trigger_index,
          path: `filter.${miss.key}`,
        };
      }
    }
    filterCheck ??= { passed: false, detail: 'no trigger takes this event, so no filter was checked' };
    const policy =
      eventCheck.passed && filterCheck.passed
        ? policyRefusal(triggerPolicyOf(first.trigger_policy), derived.origin)
        : undefined;
    const disabled = !first.enabled;
    out.push({
      ...head,
      result: eventCheck.passed && filterCheck.passed && !policy && !disabled ? 'Would trigger' : 'Would not trigger',
      event_check: disabled ? { passed: false, detail: 'the automation is disabled' } : eventCheck,
      filter_check: filterCheck,
      ...(policy ? { policy } : {}),
    });
  }
  return out;
}
