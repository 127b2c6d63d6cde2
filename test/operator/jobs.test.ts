/**
 * The `kubernetes` executor against a real API server. There is no kubelet or Job controller here: the tests
 * check the Job and Secret objects the operator creates and then write Job status through the API server the
 * way the Job controller would (pod started, Complete, Failed with its reasons), and check the runs follow.
 * What this leaves untested is listed in docs/kubernetes.md ("What the tests do not cover").
 */
import { NetworkingV1Api } from '@kubernetes/client-node';
import type { V1JobCondition } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REQUIRE_KUBERNETES, kubernetesAvailability } from './k8s.ts';
import { FOREMAN, clients, getFactory, jobTime, postJson, startJobFactory, webhookYaml } from './support.ts';
import type { JobFactory } from './support.ts';
import { automationMd } from '../support/factory-tree.ts';

const availability = kubernetesAvailability();

if (availability.missing && REQUIRE_KUBERNETES) {
  describe('Job executor against a real Kubernetes API server', () => {
    it('has the Kubernetes test environment (CI)', () => {
      throw new Error(`CI=true but ${availability.missing}`);
    });
  });
}

const FACTORY = `schemaVersion: v1alpha1
name: Job runs
repositories:
  - owner: acme
    name: api
secrets:
  - api-token
agentDefaults:
  harness:
    type: claude
    model: opus
    auth:
      source: managedSecret
      secretName: anthropic-key
  runner: default
`;

const RUNNER = `setupCommands:
  - npm ci
instanceShape:
  vcpus: 2
  memoryGb: 4
platform:
  os: linux
  linux:
    dockerImage: node:24-bookworm
`;

describe.skipIf(availability.missing !== undefined)('Job executor against a real Kubernetes API server', () => {
  const namespace = 'jobs';
  let kube: JobFactory;
  let factoryId: string;
  let factoryUid: string;
  let hookUrl: string;

  const runState = async (runId: string) =>
    (
      await kube.op.database.db.query<{ state: string; status_message: any }>(
        'SELECT state, status_message FROM runs WHERE id = $1',
        [runId],
      )
    ).rows[0]!;
  const cond = (type: string, reason?: string, message?: string): V1JobCondition & Record<string, unknown> => ({
    type,
    status: 'True',
    lastTransitionTime: jobTime() as never,
    lastProbeTime: jobTime() as never,
    ...(reason ? { reason } : {}),
    ...(message ? { message } : {}),
  });
  const newRun = async (prompt: string): Promise<string> => {
    const res = await kube.api('POST', `/factories/${factoryId}/runs`, { prompt });
    expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
    return (res.body.run_id ?? res.body.run?.run_id ?? res.body.id) as string;
  };

  beforeAll(async () => {
    kube = await startJobFactory(availability, {
      namespace,
      name: 'runs',
      files: {
        'factory.yaml': FACTORY,
        'agents/foreman/agent.md': FOREMAN,
        'runners/default.yaml': RUNNER,
        'webhooks/alerts.yaml': webhookYaml('alerts-token'),
      },
      secrets: { 'alerts-token': 'alerts-secret', 'api-token': 'api-secret-value', 'anthropic-key': 'sk-ant-test' },
      jobs: { defaultImage: 'busybox:1.36' },
    });
    const ready = kube.factory;
    factoryId = ready.status!.factoryId!;
    factoryUid = ready.metadata!.uid!;
    const hook = ready.status!.webhooks![0]!;
    hookUrl = hook.ingressUrl;
    // The automation names the webhook by the UID its first apply gave it.
    await kube.remote.write({
      'automations/triage/automation.md': automationMd(hook.uid, {
        prompt: 'Look at the alert in event-payload.json.',
      }),
    });
    const revision = `main@sha1:${await kube.remote.commitAndPush('triage automation')}`;
    await kube.told(
      async () => (await getFactory(kube.k8s, namespace, 'runs'))?.status?.appliedRevision === revision,
      30_000,
      'the automation to apply',
    );
  }, 180_000);

  afterAll(async () => {
    await kube?.stop();
  });

  it('turns a webhook delivery into a Job shaped by the runner, with its files and secrets in a Secret the Job owns', async () => {
    const delivery = await postJson(
      hookUrl,
      { severity: 'critical', service: 'api' },
      { authorization: 'Bearer alerts-secret' },
    );
    expect(delivery.status).toBe(202);
    const runId = await kube.told(
      async () => {
        const res = await kube.op.database.db.query<{ id: string }>('SELECT id FROM runs WHERE delivery_id = $1', [
          delivery.body.delivery_id,
        ]);
        return res.rows[0]?.id;
      },
      20_000,
      'the automation run',
    );
    const job = await kube.jobOf(runId);
    expect(await runState(runId)).toMatchObject({ state: 'CLAIMED' });

    expect(job.metadata!.ownerReferences).toEqual([
      {
        apiVersion: 'agentyard.dev/v1alpha1',
        kind: 'Factory',
        name: 'runs',
        uid: factoryUid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(job.metadata!.labels).toMatchObject({
      'app.kubernetes.io/managed-by': 'agentyard',
      'agentyard.dev/run-id': runId,
      'agentyard.dev/factory-uid': factoryUid,
    });
    // the runner's egress policy as a NetworkPolicy, owned by the Job, selecting its pod
    const policy = await kube.k8s.kubeConfig
      .makeApiClient(NetworkingV1Api)
      .readNamespacedNetworkPolicy({ name: job.metadata!.name!, namespace: job.metadata!.namespace! });
    expect(policy.spec!.podSelector!.matchLabels).toEqual({ 'agentyard.dev/run-id': runId });
    expect(policy.spec!.policyTypes).toEqual(['Egress']);
    expect(policy.metadata!.ownerReferences![0]).toMatchObject({ kind: 'Job', uid: job.metadata!.uid });
    const spec = job.spec!;
    expect(spec).toMatchObject({ backoffLimit: 0, ttlSecondsAfterFinished: 3600, activeDeadlineSeconds: 14_400 });
    expect(spec.podFailurePolicy!.rules[0]).toMatchObject({
      action: 'FailJob',
      onPodConditions: [{ type: 'DisruptionTarget', status: 'True' }],
    });
    const pod = spec.template.spec!;
    expect(pod.restartPolicy).toBe('Never');
    expect(pod.automountServiceAccountToken).toBe(false);
    const agent = pod.containers[0]!;
    expect(agent.image).toBe('node:24-bookworm');
    expect(agent.resources).toEqual({ requests: { cpu: '2', memory: '4Gi' }, limits: { cpu: '2', memory: '4Gi' } });
    expect(agent.command!.slice(0, 2)).toEqual(['/bin/sh', '-c']);
    expect(agent.command![2]).toContain('npm ci');
    expect(agent.command![2]).toContain('< /agentyard/run/stdin');
    expect(agent.command).toContain('claude');
    expect(agent.command).toContain('--model');
    expect(agent.workingDir).toBe('/workspace');
    const env = Object.fromEntries(agent.env!.map((e) => [e.name, e]));
    expect(env.ANTHROPIC_API_KEY!.valueFrom!.secretKeyRef).toEqual({
      name: job.metadata!.name,
      key: 'env.ANTHROPIC_API_KEY',
    });
    expect(env['api-token']).toBeUndefined();
    expect(env.AGENTYARD_EVENT_PAYLOAD!.value).toBe('/workspace/event-payload.json');
    expect(JSON.stringify(agent.env)).not.toContain('sk-ant-test');
    expect(pod.volumes!.find((v) => v.name === 'workspace')!.emptyDir).toEqual({});
    const prepared = pod.volumes!.find((v) => v.name === 'prepared')!.secret!;
    expect(prepared.secretName).toBe(job.metadata!.name);
    expect(prepared.items!.map((i) => i.path)).toContain('event-payload.json');
    expect(pod.volumes!.find((v) => v.name === 'secrets')!.secret!.items).toEqual([
      { key: 'secret.api-token', path: 'api-token' },
    ]);
    expect(pod.initContainers![0]!.volumeMounts!.map((m) => m.mountPath).sort()).toEqual([
      '/agentyard/prepared',
      '/workspace',
    ]);

    const secret = await clients(kube.k8s).core.readNamespacedSecret({ name: job.metadata!.name!, namespace });
    expect(secret.metadata!.ownerReferences).toEqual([
      {
        apiVersion: 'batch/v1',
        kind: 'Job',
        name: job.metadata!.name,
        uid: job.metadata!.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(secret.immutable).toBe(true);
    const data = (key: string) => Buffer.from(secret.data![key]!, 'base64').toString('utf8');
    expect(data('env.ANTHROPIC_API_KEY')).toBe('sk-ant-test');
    expect(data('secret.api-token')).toBe('api-secret-value');
    const payloadKey = prepared.items!.find((i) => i.path === 'event-payload.json')!.key;
    expect(JSON.parse(data(payloadKey))).toEqual({ severity: 'critical', service: 'api' });
    expect(data('prompt.txt')).toContain('Look at the alert in event-payload.json.');

    // The Job controller and kubelet would now start the pod and report it.
    await kube.setJobStatus(job, { startTime: jobTime(), active: 1, ready: 1 });
    await kube.told(async () => (await runState(runId)).state === 'INPROGRESS', 10_000, 'the run to start');
    await kube.setJobStatus(job, {
      active: 0,
      ready: 0,
      succeeded: 1,
      completionTime: jobTime(),
      conditions: [cond('SuccessCriteriaMet'), cond('Complete')],
    });
    const done = await kube.told(
      async () => {
        const r = await runState(runId);
        return r.state === 'SUCCEEDED' ? r : undefined;
      },
      10_000,
      'the run to succeed',
    );
    expect(done.status_message.message).toContain(job.metadata!.name);
  });

  it('ends a run ERROR when its Job times out or its pod is evicted, and FAILED when the agent fails', async () => {
    const cases: { status: Record<string, unknown>; state: string; code: string; text: RegExp }[] = [
      {
        status: {
          failed: 1,
          conditions: [
            cond('FailureTarget', 'DeadlineExceeded', 'Job was active longer than specified deadline'),
            cond('Failed', 'DeadlineExceeded', 'Job was active longer than specified deadline'),
          ],
        },
        state: 'ERROR',
        code: 'run_timed_out',
        text: /timed out after 14400 s/,
      },
      {
        status: {
          failed: 1,
          conditions: [
            cond(
              'FailureTarget',
              'PodFailurePolicy',
              'Pod jobs/x has condition DisruptionTarget matching FailJob rule at index 0',
            ),
            cond(
              'Failed',
              'PodFailurePolicy',
              'Pod jobs/x has condition DisruptionTarget matching FailJob rule at index 0',
            ),
          ],
        },
        state: 'ERROR',
        code: 'run_evicted',
        text: /evicted or preempted/,
      },
      {
        status: {
          failed: 1,
          conditions: [
            cond('FailureTarget', 'BackoffLimitExceeded', 'Job has reached the specified backoff limit'),
            cond('Failed', 'BackoffLimitExceeded', 'Job has reached the specified backoff limit'),
          ],
        },
        state: 'FAILED',
        code: 'agent_failed',
        text: /the agent exited with an error/,
      },
    ];
    for (const c of cases) {
      const runId = await newRun(`case ${c.code}`);
      const job = await kube.jobOf(runId);
      await kube.setJobStatus(job, { startTime: jobTime(), active: 1 });
      await kube.told(async () => (await runState(runId)).state === 'INPROGRESS', 10_000, 'the run to start');
      await kube.setJobStatus(job, { active: 0, ...c.status });
      const ended = await kube.told(
        async () => {
          const r = await runState(runId);
          return r.state === c.state ? r : undefined;
        },
        10_000,
        `the run to end ${c.state}`,
      );
      expect(ended.status_message.error_code).toBe(c.code);
      expect(ended.status_message.message).toMatch(c.text);
    }
  });

  it('deletes the Job (foreground) when its run is cancelled, and ends a run ERROR when its Job is deleted', async () => {
    const cancelled = await newRun('to be cancelled');
    const job = await kube.jobOf(cancelled);
    expect((await kube.api('POST', `/agent/runs/${cancelled}/cancel`)).status).toBeLessThan(300);
    // No garbage collector here: a foreground deletion leaves the Job marked, waiting for its dependents.
    const marked = await kube.told(
      async () => {
        const j = await kube.batch.readNamespacedJob({ name: job.metadata!.name!, namespace }).catch(() => undefined);
        return j?.metadata?.deletionTimestamp ? j : undefined;
      },
      10_000,
      'the Job to be deleted',
    );
    expect(marked.metadata!.finalizers).toContain('foregroundDeletion');

    const orphaned = await newRun('its Job goes away');
    const other = await kube.jobOf(orphaned);
    await kube.batch.deleteNamespacedJob({ name: other.metadata!.name!, namespace, propagationPolicy: 'Background' });
    const ended = await kube.told(
      async () => {
        const r = await runState(orphaned);
        return r.state === 'ERROR' ? r : undefined;
      },
      10_000,
      'the run to end ERROR',
    );
    expect(ended.status_message).toMatchObject({ error_code: 'job_deleted' });
    expect(ended.status_message.message).toContain('was deleted before the run finished');
  });

  it('deletes the Jobs of a deleted Factory and stops its runs', async () => {
    const runId = await newRun('still running when the Factory goes');
    const job = await kube.jobOf(runId);
    await kube.k8s.kubectl(['delete', '-n', namespace, 'factory/runs', '--wait=true', '--timeout=30s']);
    const j = await kube.batch.readNamespacedJob({ name: job.metadata!.name!, namespace });
    expect(j.metadata!.deletionTimestamp).toBeDefined();
    expect((await runState(runId)).state).toBe('CANCELLED');
  });
});
