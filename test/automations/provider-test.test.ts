/** A stored provider event against each automation's triggers, explained as the evaluator would decide it. */
import { describe, expect, it } from 'vitest';
import { testProviderDelivery } from '../../src/automations/provider-test.ts';
import type { ProviderTriggerRow } from '../../src/automations/provider-test.ts';
import type { DerivedEvents } from '../../src/definitions/provider-events.ts';

const row = (over: Partial<ProviderTriggerRow>): ProviderTriggerRow => ({
  automation_id: 'auto_1',
  automation_name: 'one',
  factory_id: 'fac_1',
  factory_name: 'f',
  enabled: true,
  trigger_index: 0,
  event: 'issue_labeled',
  repository: 'acme/api',
  filter: {},
  trigger_policy: null,
  ...over,
});

const labeled = (labels: string[], association = 'MEMBER'): DerivedEvents => ({
  subject: 'acme/api',
  repository: 'acme/api',
  origin: { provider: 'github', login: 'ada', association },
  events: [{ event: 'issue_labeled', facts: { labels } }],
});

describe('testProviderDelivery', () => {
  it('would trigger when an event, its repository and the filter match', () => {
    const [r] = testProviderDelivery('github', [row({ filter: { labels: { in: ['bug'] } } })], labeled(['bug']));
    expect(r).toMatchObject({ result: 'Would trigger', event_check: { passed: true }, filter_check: { passed: true } });
  });

  it('names the filter key that misses, with the values on both sides', () => {
    const [r] = testProviderDelivery('github', [row({ filter: { labels: { in: ['bug'] } } })], labeled(['docs']));
    expect(r!.result).toBe('Would not trigger');
    expect(r!.filter_check).toMatchObject({ passed: false, path: 'filter.labels', trigger_index: 0 });
    expect(r!.filter_check.detail).toContain('are "docs"; the filter wants one of "bug"');
  });

  it('says which events its triggers take, another repository, no repository', () => {
    const [other] = testProviderDelivery('github', [row({ event: 'issue_created' })], labeled([]));
    expect(other!.event_check.detail).toBe('its triggers take `issue_created`; this delivery means `issue_labeled`');
    const [repo] = testProviderDelivery('github', [row({ repository: 'acme/web' })], labeled([]));
    expect(repo!.event_check.detail).toContain('no trigger takes events from repository acme/api');
    const [none] = testProviderDelivery('github', [row({})], { ...labeled([]), repository: null });
    expect(none!.event_check.detail).toContain('names no repository');
  });

  it('leaves fetched keys unchecked, and applies the trigger policy and the enabled flag', () => {
    const opened: DerivedEvents = {
      ...labeled([]),
      events: [{ event: 'pull_request_opened', facts: { labels: [] } }],
    };
    const [paths] = testProviderDelivery(
      'github',
      [row({ event: 'pull_request_opened', filter: { paths: { in: ['src/**'] } } })],
      opened,
    );
    expect(paths!.result).toBe('Would trigger');
    expect(paths!.filter_check.detail).toContain('changed files are fetched');
    const [outsider] = testProviderDelivery('github', [row({})], labeled([], 'NONE'));
    expect(outsider!.result).toBe('Would not trigger');
    expect(outsider!.policy).toContain('may not trigger this factory');
    const [off] = testProviderDelivery('github', [row({ enabled: false })], labeled([]));
    expect(off).toMatchObject({ result: 'Would not trigger', event_check: { detail: 'the automation is disabled' } });
  });

  it('tests each automation once, by its first trigger that matches', () => {
    const results = testProviderDelivery(
      'github',
      [
        row({ trigger_index: 0, filter: { labels: { in: ['x'] } } }),
        row({ trigger_index: 1, filter: { labels: { in: ['bug'] } } }),
        row({ automation_id: 'auto_2', automation_name: 'two', event: 'push' }),
      ],
      labeled(['bug']),
    );
    expect(results.map((r) => [r.automation_name, r.result, r.filter_check.trigger_index])).toEqual([
      ['one', 'Would trigger', 1],
      ['two', 'Would not trigger', undefined],
    ]);
  });
});
