import { describe, expect, it } from 'vitest';
import type { V1Job } from '@kubernetes/client-node';
import { ConditionSet, MAX_MESSAGE_LENGTH } from '../../src/operator/conditions.ts';
import { parseDuration, validateFactorySpec } from '../../src/operator/factory-resource.ts';
import { statusEvents } from '../../src/operator/factory-status.ts';
import type { FactoryStatus } from '../../src/operator/factory-resource.ts';
import { jobNameFor, jobOutcome } from '../../src/operator/job-spec.ts';
import { ManualClock } from '../../src/kernel/clock.ts';
import { WorkQueue } from '../../src/kernel/work-queue.ts';
import { TerminalError, runWorkers } from '../../src/operator/reconcile.ts';
import { parseSecretReference } from '../../src/operator/secret-provider.ts';
import { operatorNamespace } from '../../src/operator/kube.ts';
import { createLogger } from '../../src/log.ts';

describe('runWorkers', () => {
  const log = createLogger('silent');
  const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

  it('retries errors with backoff, never retries a TerminalError, and requeues on requeueAfterMs', async () => {
    const clock = new ManualClock();
    const queue = new WorkQueue({ clock });
    const seen: string[] = [];
    const abort = new AbortController();
    const outcomes: string[] = [];
    const done = runWorkers({
      name: 'test',
      queue,
      concurrency: 2,
      signal: abort.signal,
      log,
      observe: (o) => outcomes.push(o),
      reconcile: async (key) => {
        seen.push(key);
        if (key === 'fails') throw new Error('boom');
        if (key === 'terminal') throw new TerminalError('bad spec');
        if (key === 'polls') return { requeueAfterMs: 30_000 };
      },
    });
    queue.add('fails');
    queue.add('terminal');
    queue.add('polls');
    await settle();
    expect(seen.sort()).toEqual(['fails', 'polls', 'terminal']);
    expect(queue.delayed).toBe(2);
    expect(queue.failures('fails')).toBe(1);
    expect(queue.failures('terminal')).toBe(0);
    clock.advance(1_000);
    await settle();
    expect(seen.filter((k) => k === 'fails').length).toBe(2);
    expect(outcomes).toContain('terminal');
    abort.abort();
    await done;
  });
});

describe('ConditionSet', () => {
  it('keeps lastTransitionTime while status, reason and message stay the same', () => {
    let t = Date.parse('2030-01-01T00:00:00Z');
    const now = () => new Date(t);
    const first = new ConditionSet([], 1, now);
    first.set('Ready', 'True', 'Succeeded', 'Applied revision: main@sha1:a');
    const stored = first.toArray();
    expect(stored[0]).toMatchObject({ lastTransitionTime: '2030-01-01T00:00:00Z', observedGeneration: 1 });
    t += 60_000;
    const again = new ConditionSet(stored, 2, now);
    again.set('Ready', 'True', 'Succeeded', 'Applied revision: main@sha1:a');
    expect(again.get('Ready')).toMatchObject({ lastTransitionTime: '2030-01-01T00:00:00Z', observedGeneration: 2 });
    again.set('Ready', 'True', 'Succeeded', 'Applied revision: main@sha1:b');
    expect(again.get('Ready')!.lastTransitionTime).toBe('2030-01-01T00:01:00Z');
  });

  it('keeps Stalled and Reconciling only while True, and never both', () => {
    const c = new ConditionSet([], 1);
    c.set('Stalled', 'True', 'InvalidSpec', 'x');
    c.set('Reconciling', 'True', 'Progressing', 'y');
    expect(c.get('Stalled')).toBeUndefined();
    c.set('Reconciling', 'False', 'Done', 'z');
    expect(c.get('Reconciling')).toBeUndefined();
  });

  it('trims long messages, refuses reasons that are not PascalCase, and orders Ready first', () => {
    const c = new ConditionSet([], 1);
    c.set('SourceReady', 'True', 'Succeeded', 'x'.repeat(MAX_MESSAGE_LENGTH + 10));
    c.set('Ready', 'True', 'Succeeded', 'ok');
    expect(c.get('SourceReady')!.message.length).toBe(MAX_MESSAGE_LENGTH);
    expect(c.toArray().map((x) => x.type)).toEqual(['Ready', 'SourceReady']);
    expect(() => c.set('Ready', 'False', 'not pascal', 'x')).toThrow(/PascalCase/);
  });
});

describe('Factory spec', () => {
  it('parses Go durations into whole seconds', () => {
    expect(parseDuration('0')).toBe(0);
    expect(parseDuration('30s')).toBe(30);
    expect(parseDuration('1m30s')).toBe(90);
    expect(parseDuration('1.5h')).toBe(5_400);
    expect(parseDuration('500ms')).toBe(1);
    expect(() => parseDuration('soon')).toThrow(/not a duration/);
  });

  it('fills in defaults and names the field of an error', () => {
    const ok = validateFactorySpec({ source: { git: { url: 'file:///srv/r.git' } } });
    expect(ok).toMatchObject({
      spec: { suspend: false, executor: 'kubernetes', source: { git: { branch: 'main', pollInterval: '1m' } } },
    });
    expect(validateFactorySpec({ source: { git: {} } })).toEqual({ error: 'spec.source.git.url is required' });
    expect(validateFactorySpec({ source: { git: { url: 'x', pollInterval: '48h' } } })).toEqual({
      error: 'spec.source.git.pollInterval must be at most 24h',
    });
    expect('error' in validateFactorySpec({ source: { git: { url: 'x' } }, executor: 'docker' })).toBe(true);
  });

  it('reads secret references as name or name/key', () => {
    expect(parseSecretReference('gh-token')).toEqual({ name: 'gh-token', key: 'value' });
    expect(parseSecretReference('git-creds/ssh-privatekey')).toEqual({ name: 'git-creds', key: 'ssh-privatekey' });
    expect(parseSecretReference('Not_A_Name')).toBeUndefined();
  });

  it('takes the operator namespace from AGENTYARD_NAMESPACE, else the service account, else default', () => {
    expect(operatorNamespace({ AGENTYARD_NAMESPACE: 'ops' }, '/nonexistent')).toBe('ops');
    expect(operatorNamespace({}, '/nonexistent')).toBe('default');
  });
});

describe('status events', () => {
  const cond = (type: string, status: 'True' | 'False', reason: string, message: string) => ({
    type,
    status,
    reason,
    message,
    lastTransitionTime: '2030-01-01T00:00:00Z',
  });
  const applied: FactoryStatus = {
    appliedRevision: 'main@sha1:a',
    conditions: [
      cond('Applied', 'True', 'Applied', 'Applied revision: main@sha1:a'),
      cond('SourceReady', 'True', 'Succeeded', 'ok'),
    ],
  };

  it('fires on transitions only', () => {
    expect(statusEvents(undefined, applied, 'ns')).toEqual([
      { type: 'Normal', reason: 'Applied', message: 'Applied revision: main@sha1:a' },
    ]);
    expect(statusEvents(applied, applied, 'ns')).toEqual([]);
  });

  it('names each missing Secret of a refused revision', () => {
    const refused: FactoryStatus = {
      ...applied,
      conditions: [
        cond('Applied', 'False', 'ValidationFailed', 'validate main@sha1:b: 1 error'),
        cond('SourceReady', 'True', 'Succeeded', 'ok'),
      ],
      errors: [
        {
          file: 'webhooks/a.yaml',
          line: 2,
          column: 13,
          path: '/secretName',
          code: 'FF_INVALID_REFERENCE',
          message: 'no managed secret named `creds/token`',
          severity: 'error',
        },
      ],
    };
    const events = statusEvents(applied, refused, 'team-a');
    expect(events.map((e) => e.reason)).toEqual(['ValidationFailed', 'SecretNotFound']);
    expect(events[1]!.message).toContain('Secret team-a/creds with key "token" does not exist (webhooks/a.yaml:2:13)');
  });
});

describe('Job status', () => {
  const job = (status: V1Job['status'], spec: V1Job['spec'] = { template: {}, activeDeadlineSeconds: 600 }): V1Job => ({
    spec,
    status,
  });
  const c = (type: string, reason?: string, message?: string) => ({
    type,
    status: 'True',
    ...(reason ? { reason } : {}),
    ...(message ? { message } : {}),
  });

  it('reads a Job as the run state machine needs it', () => {
    expect(jobOutcome(job({}))).toEqual({ kind: 'running', started: false });
    expect(jobOutcome(job({ active: 1 }))).toEqual({ kind: 'running', started: true });
    expect(jobOutcome(job({ active: 1 }, { template: {}, suspend: true }))).toEqual({
      kind: 'running',
      started: false,
    });
    expect(jobOutcome(job({ conditions: [c('Complete')] }))).toEqual({ kind: 'succeeded' });
    expect(jobOutcome(job({ conditions: [c('Failed', 'DeadlineExceeded')] }))).toMatchObject({
      event: 'error',
      code: 'run_timed_out',
      message: expect.stringContaining('600 s'),
    });
    expect(
      jobOutcome(
        job({
          conditions: [
            c('Failed', 'PodFailurePolicy', 'Pod x has condition DisruptionTarget matching FailJob rule at index 0'),
          ],
        }),
      ),
    ).toMatchObject({
      event: 'error',
      code: 'run_evicted',
    });
    expect(jobOutcome(job({ conditions: [c('Failed', 'BackoffLimitExceeded')] }))).toMatchObject({
      event: 'fail',
      code: 'agent_failed',
    });
    expect(jobOutcome(job({ conditions: [c('Failed', 'Surprise')] }))).toMatchObject({
      event: 'error',
      code: 'job_failed',
      message: expect.stringContaining('Surprise'),
    });
  });

  it('names Jobs after executions, as DNS labels', () => {
    expect(jobNameFor('exe_01jz8k2m3n4p5q6r7s8t9v0w1x')).toBe('agentyard-exe-01jz8k2m3n4p5q6r7s8t9v0w1x');
    expect(jobNameFor('exe_01jz8k2m3n4p5q6r7s8t9v0w1x').length).toBeLessThanOrEqual(63);
  });
});
