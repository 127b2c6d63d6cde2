/**
 * The Helm chart: `helm lint`, `helm template` with several value sets, the template `fail` guards and the
 * values schema, kubeconform against schemas generated from a real API server (with the Factory CRD
 * installed), and a server-side dry-run apply of what the chart renders.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { REQUIRE_KUBERNETES, kubernetesAvailability, startKubernetes } from '../operator/k8s.ts';
import type { KubernetesTestEnv } from '../operator/k8s.ts';
import { kubeconformSchemas } from './kubeconform-schemas.ts';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const CHART = path.join(ROOT, 'charts/agentyard');
const availability = kubernetesAvailability();
const bin = (name: string) => path.join(availability.cacheDir, 'bin', name);

type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: any;
  rules?: any[];
  data?: Record<string, string>;
};

const VALUE_SETS: Record<string, string[]> = {
  defaults: [],
  postgres: [
    '--set',
    'database.existingSecret=agentyard-db',
    '--set',
    'replicaCount=3',
    '--set',
    'ingress.enabled=true',
    '--set',
    'ingress.host=agentyard.example.com',
    '--set',
    'ingress.className=nginx',
    '--set',
    'operator.watchNamespace=teams',
    '--set',
    'masterKey.existingSecret=agentyard-key',
    '--set',
    'publicUrl=https://agentyard.example.com',
  ],
  tuned: [
    '--set',
    'executor.workspaceSizeLimit=10Gi',
    '--set',
    'executor.deleteFinishedJobs=true',
    '--set',
    'executor.serviceAccountName=agent-runs',
    '--set',
    'podDisruptionBudget.enabled=false',
    '--set',
    'logLevel=debug',
    '--set',
    'persistence.storageClassName=fast',
  ],
};

async function helm(args: string[]): Promise<string> {
  const { stdout } = await run(bin('helm'), args, { cwd: ROOT, maxBuffer: 16 << 20 });
  return stdout;
}

async function helmFails(args: string[]): Promise<string> {
  try {
    await helm(args);
  } catch (err) {
    return String((err as { stderr?: string }).stderr ?? err);
  }
  throw new Error(`helm ${args.join(' ')} succeeded`);
}

async function render(set: string): Promise<{ text: string; docs: Manifest[] }> {
  const text = await helm(['template', 'agentyard', CHART, '--namespace', 'agentyard', ...VALUE_SETS[set]!]);
  const docs = parseAllDocuments(text)
    .map((d) => d.toJSON() as Manifest | null)
    .filter((d): d is Manifest => d !== null);
  return { text, docs };
}

const find = (docs: Manifest[], kind: string, name?: string) =>
  docs.find((d) => d.kind === kind && (!name || d.metadata.name === name));

if (availability.missing && REQUIRE_KUBERNETES) {
  describe('Helm chart', () => {
    it('has the Kubernetes test tools (CI)', () => {
      throw new Error(`CI=true but ${availability.missing}`);
    });
  });
}

describe.skipIf(availability.missing !== undefined)('Helm chart', () => {
  it.each(Object.keys(VALUE_SETS))('passes helm lint with the %s values', async (set) => {
    const out = await helm(['lint', CHART, '--strict', ...VALUE_SETS[set]!]);
    expect(out).toContain('0 chart(s) failed');
  });

  it('renders a locked-down Deployment with probes, a PGlite volume and a generated master key by default', async () => {
    const { docs } = await render('defaults');
    const deployment = find(docs, 'Deployment')!;
    expect(deployment.spec.replicas).toBe(1);
    expect(deployment.spec.strategy).toEqual({ type: 'Recreate' });
    const pod = deployment.spec.template.spec;
    expect(pod.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: 10001,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    const container = pod.containers[0];
    expect(container.args).toEqual(['operator']);
    expect(container.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(container.livenessProbe.httpGet.path).toBe('/healthz');
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
    expect(container.volumeMounts.map((m: { mountPath: string }) => m.mountPath).sort()).toEqual(['/data', '/tmp']);
    expect(pod.volumes.find((v: { name: string }) => v.name === 'data').persistentVolumeClaim.claimName).toBe(
      'agentyard-data',
    );
    expect(find(docs, 'PersistentVolumeClaim', 'agentyard-data')).toBeDefined();
    const env = Object.fromEntries(container.env.map((e: { name: string }) => [e.name, e]));
    expect(env.DATABASE_URL).toBeUndefined();
    expect(env.AGENTYARD_REQUIRE_SANDBOX.value).toBe('1');
    expect(env.AGENTYARD_NAMESPACE.valueFrom.fieldRef.fieldPath).toBe('metadata.namespace');
    expect(env.AGENTYARD_MASTER_KEY.valueFrom.secretKeyRef).toEqual({
      name: 'agentyard-master-key',
      key: 'master-key',
    });
    const key = Buffer.from(find(docs, 'Secret', 'agentyard-master-key')!.data!['master-key']!, 'base64').toString(
      'utf8',
    );
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(find(docs, 'PodDisruptionBudget')!.spec.maxUnavailable).toBe(1);
    expect(find(docs, 'Ingress')).toBeUndefined();
  });

  it('grants named verbs on named resources only', async () => {
    const { docs } = await render('defaults');
    const role = find(docs, 'ClusterRole')!;
    expect(role.rules).toEqual([
      { apiGroups: ['agentyard.dev'], resources: ['factories'], verbs: ['get', 'list', 'watch', 'patch'] },
      { apiGroups: ['agentyard.dev'], resources: ['factories/status'], verbs: ['get', 'patch'] },
      { apiGroups: ['agentyard.dev'], resources: ['factories/finalizers'], verbs: ['update'] },
      { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'create', 'update'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
      { apiGroups: ['batch'], resources: ['jobs'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
      // each Job's egress policy, owned by the Job (deleted with it)
      { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ['create'] },
    ]);
    for (const rule of role.rules!) expect(rule.verbs).not.toContain('*');
    const election = find(docs, 'Role', 'agentyard-leader-election')!;
    expect(election.metadata.namespace).toBe('agentyard');
    expect(election.rules).toEqual([
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        resourceNames: ['agentyard-operator'],
        verbs: ['get', 'update'],
      },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
    ]);
  });

  it('scales out on PostgreSQL: rolling updates, DATABASE_URL from a Secret, a Role in the watched namespace, an Ingress for webhooks and the API', async () => {
    const { docs } = await render('postgres');
    const deployment = find(docs, 'Deployment')!;
    expect(deployment.spec.replicas).toBe(3);
    expect(deployment.spec.strategy.type).toBe('RollingUpdate');
    const container = deployment.spec.template.spec.containers[0];
    const env = Object.fromEntries(container.env.map((e: { name: string }) => [e.name, e]));
    expect(env.DATABASE_URL.valueFrom.secretKeyRef).toEqual({ name: 'agentyard-db', key: 'DATABASE_URL' });
    expect(env.AGENTYARD_WATCH_NAMESPACE.value).toBe('teams');
    expect(env.AGENTYARD_MASTER_KEY.valueFrom.secretKeyRef.name).toBe('agentyard-key');
    expect(deployment.spec.template.spec.volumes.find((v: { name: string }) => v.name === 'data').emptyDir).toEqual({});
    expect(find(docs, 'PersistentVolumeClaim')).toBeUndefined();
    expect(find(docs, 'Secret')).toBeUndefined();
    expect(find(docs, 'ClusterRole')).toBeUndefined();
    expect(find(docs, 'Role', 'agentyard')!.metadata.namespace).toBe('teams');
    expect(find(docs, 'RoleBinding', 'agentyard')!.metadata.namespace).toBe('teams');
    const ingress = find(docs, 'Ingress')!;
    expect(ingress.spec.rules[0].host).toBe('agentyard.example.com');
    expect(ingress.spec.rules[0].http.paths.map((p: { path: string }) => p.path)).toEqual([
      '/webhooks',
      '/api',
      '/sessions',
    ]);
  });

  it.each([
    [['--set', 'replicaCount=2'], /replicaCount=2 needs PostgreSQL: set database.existingSecret/],
    [['--set', 'persistence.enabled=false'], /persistence.enabled=false needs PostgreSQL/],
    [['--set', 'ingress.enabled=true'], /ingress.enabled=true needs ingress.host/],
    [
      ['--set', 'operator.renewDeadlineSeconds=20'],
      /leaseDurationSeconds must be greater than operator.renewDeadlineSeconds/,
    ],
    [
      ['--set', 'operator.retryPeriodSeconds=9'],
      /renewDeadlineSeconds must be greater than 1.2 × operator.retryPeriodSeconds/,
    ],
  ])('refuses %j with a message naming the value', async (args, message) => {
    expect(await helmFails(['template', 'agentyard', CHART, ...args])).toMatch(message);
  });

  it.each([
    [['--set', 'replicaCount=three'], "at '/replicaCount': got string, want integer"],
    [['--set', 'logLevel=loud'], "at '/logLevel'"],
    [['--set', 'unknownKey=1'], "additional properties 'unknownKey' not allowed"],
    [['--set', 'executor.defaultHarness=emacs'], "at '/executor/defaultHarness'"],
    [['--set', 'resources.limits.memory=lots'], "at '/resources/limits/memory'"],
    [['--set', 'publicUrl=ftp://x'], "at '/publicUrl'"],
  ])('rejects bad values through values.schema.json: %j', async (args, message) => {
    expect(await helmFails(['template', 'agentyard', CHART, ...args])).toContain(message);
  });

  describe('against a real API server', () => {
    let k8s: KubernetesTestEnv;
    let kubeconform: string[];
    let schemas: { dir: string; location: string } | undefined;

    beforeAll(async () => {
      k8s = await startKubernetes(availability);
      await k8s.kubectl(['apply', '-f', path.join(CHART, 'crds')]);
      await k8s.crdEstablished('factories.agentyard.dev');
      // JSON schemas of the kinds the chart renders and of the Factory CRD, from the server's /openapi/v2
      const kinds = new Set(['Factory']);
      for (const set of Object.keys(VALUE_SETS)) for (const doc of (await render(set)).docs) kinds.add(doc.kind);
      schemas = await kubeconformSchemas(k8s, kinds);
      kubeconform = ['-strict', '-summary', '-output', 'json', '-schema-location', schemas.location];
    }, 300_000);

    afterAll(async () => {
      if (schemas) rmSync(schemas.dir, { recursive: true, force: true });
      await k8s?.stop();
    });

    it.each(Object.keys(VALUE_SETS))('validates what the %s values render with kubeconform', async (set) => {
      const { text } = await render(set);
      const dir = mkdtempSync(path.join(tmpdir(), 'agentyard-chart-'));
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const file = path.join(dir, `${set}.yaml`);
      writeFileSync(file, text);
      const { stdout } = await run(bin('kubeconform'), [...kubeconform, file], { maxBuffer: 16 << 20 });
      const report = JSON.parse(stdout) as {
        summary: { valid: number; invalid: number; errors: number; skipped: number };
      };
      expect(report.summary).toMatchObject({ invalid: 0, errors: 0, skipped: 0 });
      expect(report.summary.valid).toBeGreaterThanOrEqual(8);
    });

    it('validates the CRD and a Factory manifest with kubeconform', async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'agentyard-factory-'));
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const file = path.join(dir, 'factory.yaml');
      writeFileSync(
        file,
        `apiVersion: agentyard.dev/v1alpha1
kind: Factory
metadata:
  name: alerts
  namespace: team-a
spec:
  source:
    git:
      url: https://github.com/acme/factory.git
      branch: main
      path: factories/alerts
      pollInterval: 5m
      credentialsSecretRef:
        name: factory-repo
  executor: kubernetes
  ingress:
    baseUrl: https://hooks.example.com
`,
      );
      const { stdout } = await run(bin('kubeconform'), [...kubeconform, file], { maxBuffer: 1 << 20 });
      expect(JSON.parse(stdout).summary).toMatchObject({ valid: 1, invalid: 0, errors: 0 });
      writeFileSync(
        file,
        `apiVersion: agentyard.dev/v1alpha1\nkind: Factory\nmetadata:\n  name: bad\nspec:\n  source:\n    git:\n      url: x\n      pollInterval: soon\n`,
      );
      const bad = await run(bin('kubeconform'), [...kubeconform, file], { maxBuffer: 1 << 20 }).catch(
        (err: { stdout: string }) => err,
      );
      expect(JSON.parse(bad.stdout).summary).toMatchObject({ invalid: 1 });
    });

    it('applies what the chart renders in a server-side dry run', async () => {
      await k8s.kubectl(['create', 'namespace', 'agentyard']);
      await k8s.kubectl(['create', 'namespace', 'teams']);
      for (const set of Object.keys(VALUE_SETS)) {
        const { text } = await render(set);
        const out = await k8s.kubectl(['apply', '--dry-run=server', '-f', '-'], text);
        expect(out).toContain('deployment.apps/agentyard created (server dry run)');
      }
    });
  });
});
