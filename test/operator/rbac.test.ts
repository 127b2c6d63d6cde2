/**
 * The operator running as the chart's ServiceAccount, with only the chart's RBAC, against a real API server
 * with RBAC authorization: every call it makes (Factories, status, finalizers, Secrets, Events, Jobs,
 * the Lease) must be granted, and nothing more is.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { BatchV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGitRemote } from '../sources/git-fixture.ts';
import type { GitRemote } from '../sources/git-fixture.ts';
import { REQUIRE_KUBERNETES, kubernetesAvailability, startKubernetes, whenKubernetesTold } from './k8s.ts';
import type { KubernetesTestEnv } from './k8s.ts';
import {
  baseFiles,
  clients,
  condition,
  createNamespace,
  factoryEvents,
  factoryManifest,
  getFactory,
  putSecret,
  startTestOperator,
  webhookYaml,
} from './support.ts';
import type { TestOperator } from './support.ts';

const run = promisify(execFile);
const availability = kubernetesAvailability();
const ROOT = path.resolve(import.meta.dirname, '../..');

if (availability.missing && REQUIRE_KUBERNETES) {
  describe('operator with the chart RBAC', () => {
    it('has the Kubernetes test environment (CI)', () => {
      throw new Error(`CI=true but ${availability.missing}`);
    });
  });
}

describe.skipIf(availability.missing !== undefined)('operator with the chart RBAC', () => {
  const release = 'agentyard';
  const team = 'team-rbac';
  let k8s: KubernetesTestEnv;
  let op: TestOperator;
  let remote: GitRemote;
  let asOperator: KubeConfig;

  beforeAll(async () => {
    k8s = await startKubernetes(availability);
    await k8s.kubectl(['apply', '-f', path.join(ROOT, 'crds')]);
    await k8s.crdEstablished('factories.agentyard.dev');
    await createNamespace(k8s, release);
    await createNamespace(k8s, team);
    const { stdout: rendered } = await run(
      path.join(availability.cacheDir, 'bin', 'helm'),
      [
        'template',
        'agentyard',
        path.join(ROOT, 'charts/agentyard'),
        '--namespace',
        release,
        '--show-only',
        'templates/serviceaccount.yaml',
        '--show-only',
        'templates/rbac.yaml',
      ],
      { maxBuffer: 1 << 20 },
    );
    await k8s.kubectl(['apply', '-f', '-'], rendered);
    const token = (await k8s.kubectl(['create', 'token', 'agentyard', '-n', release, '--duration=1h'])).trim();
    const admin = k8s.kubeConfig.getCurrentCluster()!;
    asOperator = new KubeConfig();
    asOperator.loadFromOptions({
      clusters: [
        { name: 'test', server: admin.server, caData: admin.caData, caFile: admin.caFile, skipTLSVerify: false },
      ],
      users: [{ name: 'operator', token }],
      contexts: [{ name: 'operator', cluster: 'test', user: 'operator', namespace: release }],
      currentContext: 'operator',
    });
    await putSecret(k8s, team, 'alerts-token', { value: 'token-one' });
    op = await startTestOperator(
      k8s,
      'pglite',
      release,
      { defaultImage: 'busybox:1.36' },
      { kubeConfig: asOperator, watchNamespace: undefined },
    );
    remote = await createGitRemote();
    await remote.write({ ...baseFiles(), 'webhooks/alerts.yaml': webhookYaml('alerts-token') });
    await remote.commitAndPush('initial tree');
  }, 120_000);

  afterAll(async () => {
    await op?.stop();
    remote?.close();
    await k8s?.stop();
  });

  it('reconciles a Factory, runs a Job and finalizes with the chart permissions alone', async () => {
    await k8s.kubectl(
      ['apply', '-f', '-'],
      factoryManifest(team, 'alerts', {
        source: { git: { url: `file://${remote.bare}`, pollInterval: '0' } },
        ingress: { baseUrl: 'https://hooks.example.com/' },
      }),
    );
    const ready = await whenKubernetesTold(
      k8s,
      team,
      async () => {
        const f = await getFactory(k8s, team, 'alerts');
        return condition(f, 'Ready')?.status === 'True' ? f : undefined;
      },
      30_000,
      'Ready=True as the operator ServiceAccount',
    );
    expect(ready.metadata!.finalizers).toContain('agentyard.dev/finalizer');
    // spec.ingress.baseUrl is what senders are told.
    expect(ready.status!.webhooks![0]!.ingressUrl).toMatch(/^https:\/\/hooks\.example\.com\/webhooks\/w\/wh_/);
    await whenKubernetesTold(
      k8s,
      team,
      async () => (await factoryEvents(k8s, team, ready.metadata!.uid!)).some((e) => e.reason === 'Applied'),
      10_000,
      'an Applied event',
    );
    const keySecret = await clients(k8s).core.readNamespacedSecret({ name: 'agentyard-api-key', namespace: team });
    const key = Buffer.from(keySecret.data!.token!, 'base64').toString('utf8');

    const created = await fetch(`${op.url}/api/v1/factories/${ready.status!.factoryId}/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'run as a Job' }),
    });
    expect(created.status).toBeLessThan(300);
    const runId = ((await created.json()) as { run_id: string }).run_id;
    const batch = k8s.kubeConfig.makeApiClient(BatchV1Api);
    const job = await whenKubernetesTold(
      k8s,
      team,
      async () => {
        const list = await batch.listNamespacedJob({ namespace: team, labelSelector: `agentyard.dev/run-id=${runId}` });
        return list.items[0]?.spec?.suspend === false ? list.items[0] : undefined;
      },
      20_000,
      'the Job, created and started by the operator ServiceAccount',
    );
    expect(job.metadata!.ownerReferences![0]).toMatchObject({ kind: 'Factory', blockOwnerDeletion: true });
    await clients(k8s).core.readNamespacedSecret({ name: job.metadata!.name!, namespace: team });

    await k8s.kubectl(['delete', '-n', team, 'factory/alerts', '--wait=true', '--timeout=30s']);
    expect(await getFactory(k8s, team, 'alerts')).toBeUndefined();
    expect(
      (await batch.readNamespacedJob({ name: job.metadata!.name!, namespace: team })).metadata!.deletionTimestamp,
    ).toBeDefined();
  });

  it('is refused what the chart does not grant', async () => {
    const core = asOperator.makeApiClient(CoreV1Api);
    await expect(core.listNamespacedSecret({ namespace: team })).rejects.toMatchObject({ code: 403 });
    await expect(core.listNamespacedPod({ namespace: team })).rejects.toMatchObject({ code: 403 });
    await expect(core.deleteNamespacedSecret({ name: 'alerts-token', namespace: team })).rejects.toMatchObject({
      code: 403,
    });
  });
});
