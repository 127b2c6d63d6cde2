import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BatchV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { V1Job } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import type { CoreV1Event } from '@kubernetes/client-node';
import { loadConfig } from '../../src/config.ts';
import type { Config } from '../../src/config.ts';
import { generateApiKey } from '../../src/identity/api-keys.ts';
import { createLogger } from '../../src/log.ts';
import type { FactoryResource } from '../../src/operator/factory-resource.ts';
import { DEFAULT_JOB_SETTINGS } from '../../src/operator/job-spec.ts';
import type { JobSettings } from '../../src/operator/job-spec.ts';
import { startOperator } from '../../src/operator/manager.ts';
import type { OperatorSettings, RunningOperator } from '../../src/operator/manager.ts';
import { createTestDatabase } from '../support/db.ts';
import type { Engine, TestDatabase } from '../support/db.ts';
import { TEST_MASTER_KEY } from '../support/server.ts';
import { createGitRemote } from '../sources/git-fixture.ts';
import type { GitRemote } from '../sources/git-fixture.ts';
import type { Availability, KubernetesTestEnv } from './k8s.ts';
import { eventually, startKubernetes, whenKubernetesTold } from './k8s.ts';

/** Leases short enough for tests: a stopped leader's lease is taken over within seconds. */
export function testSettings(namespace: string, identity: string, jobs: Partial<JobSettings> = {}): OperatorSettings {
  return {
    namespace,
    leaseName: 'agentyard-operator',
    identity,
    leaseDurationMs: 4_000,
    renewDeadlineMs: 3_000,
    retryPeriodMs: 500,
    jitterFactor: 1.2,
    apiKeySecret: 'agentyard-api-key',
    resyncMs: 60_000,
    watchNamespace: namespace,
    jobs: { ...DEFAULT_JOB_SETTINGS, ...jobs },
  };
}

export interface TestOperator {
  operator: RunningOperator;
  database: TestDatabase;
  url: string;
  adminKey: string;
  stop(): Promise<void>;
}

/** An operator in this process on a fresh database, watching one namespace, waiting until it leads. */
export async function startTestOperator(
  k8s: KubernetesTestEnv,
  engine: Engine,
  namespace: string,
  jobs: Partial<JobSettings> = {},
  options: {
    kubeConfig?: KubeConfig;
    watchNamespace?: string | undefined;
    waitForSync?: boolean;
    /** The server's configuration beyond the test defaults (AGENTYARD_PUBLIC_URL…). */
    config?: Partial<Config>;
  } = {},
): Promise<TestOperator> {
  const database = await createTestDatabase(engine);
  const adminKey = generateApiKey();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'agentyard-operator-'));
  const config = loadConfig(
    {},
    {
      port: 0,
      host: '127.0.0.1',
      dataDir,
      bootstrapApiKey: adminKey,
      logLevel: 'silent',
      masterKey: TEST_MASTER_KEY,
      ...options.config,
    },
  );
  const settings = testSettings(namespace, `test-${engine}-${namespace}`, jobs);
  if ('watchNamespace' in options) settings.watchNamespace = options.watchNamespace;
  const operator = await startOperator({
    config,
    settings,
    kubeConfig: options.kubeConfig ?? k8s.kubeConfig,
    db: database.db,
    log: createLogger(process.env.AGENTYARD_TEST_LOG ?? 'silent'),
  });
  if (options.waitForSync !== false)
    await eventually(
      () => operator.isLeader() && operator.factories()?.informer.synced,
      20_000,
      'the operator to lead with synced caches',
    );
  return {
    operator,
    database,
    url: operator.server.url,
    adminKey,
    async stop() {
      await operator.stop();
      await database.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export function clients(k8s: KubernetesTestEnv): { core: CoreV1Api; custom: CustomObjectsApi } {
  return { core: k8s.kubeConfig.makeApiClient(CoreV1Api), custom: k8s.kubeConfig.makeApiClient(CustomObjectsApi) };
}

export async function getFactory(
  k8s: KubernetesTestEnv,
  namespace: string,
  name: string,
): Promise<FactoryResource | undefined> {
  try {
    return (await clients(k8s).custom.getNamespacedCustomObject({
      group: 'agentyard.dev',
      version: 'v1alpha1',
      namespace,
      plural: 'factories',
      name,
    })) as FactoryResource;
  } catch (err) {
    if ((err as { code?: number }).code === 404) return undefined;
    throw err;
  }
}

export function condition(f: FactoryResource | undefined, type: string) {
  return f?.status?.conditions?.find((c) => c.type === type);
}

/** The Factory `name` once `holds` says so of it, looked at on each change the API server tells (whenKubernetesTold). */
export function whenFactory(
  k8s: KubernetesTestEnv,
  namespace: string,
  name: string,
  holds: (f: FactoryResource) => boolean,
  what: string,
  timeoutMs = 20_000,
): Promise<FactoryResource> {
  return whenKubernetesTold(
    k8s,
    namespace,
    async () => {
      const f = await getFactory(k8s, namespace, name);
      return f && holds(f) ? f : undefined;
    },
    timeoutMs,
    what,
  );
}

export async function factoryEvents(k8s: KubernetesTestEnv, namespace: string, uid: string): Promise<CoreV1Event[]> {
  const list = await clients(k8s).core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.uid=${uid}` });
  return list.items;
}

export async function putSecret(
  k8s: KubernetesTestEnv,
  namespace: string,
  name: string,
  data: Record<string, string>,
): Promise<void> {
  const { core } = clients(k8s);
  const body = { metadata: { name, namespace }, stringData: data };
  try {
    await core.createNamespacedSecret({ namespace, body });
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
    await core.replaceNamespacedSecret({ name, namespace, body });
  }
}

export async function createNamespace(k8s: KubernetesTestEnv, namespace: string): Promise<void> {
  await k8s.kubectl(['create', 'namespace', namespace]);
}

/** A Factory manifest (YAML) for `kubectl apply`. */
export function factoryManifest(namespace: string, name: string, spec: Record<string, unknown>): string {
  return JSON.stringify({ apiVersion: 'agentyard.dev/v1alpha1', kind: 'Factory', metadata: { name, namespace }, spec });
}

export { baseFiles, FOREMAN, webhookYaml } from '../support/factory-tree.ts';

export async function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, body: parsed };
}

/** A time as the Job controller writes it in a Job's status (seconds, no fraction). */
export const jobTime = (): string => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

/** A real API server with the CRDs, an operator leading one namespace, and a Factory of it Ready. */
export interface JobFactory {
  k8s: KubernetesTestEnv;
  op: TestOperator;
  remote: GitRemote;
  batch: BatchV1Api;
  /** The Factory as it was when it became Ready. */
  factory: FactoryResource;
  /** The team's API key, from the Secret the operator writes. */
  teamKey: string;
  /** A request to the operator's API with the team's key. */
  api(method: string, url: string, body?: unknown): Promise<{ status: number; body: any }>;
  /** The Job of a run, once the operator has created it and let it start (not suspended). */
  jobOf(runId: string): Promise<V1Job>;
  /** Writes a Job's status, as the Job controller would (there is none here). */
  setJobStatus(job: V1Job, status: Record<string, unknown>): Promise<string>;
  /** What `check` answers once it answers a value, asked on each change the API server or the operator tells. */
  told<T>(check: () => Promise<T | undefined | false>, timeoutMs: number, what: string): Promise<T>;
  stop(): Promise<void>;
}

export interface JobFactoryOptions {
  namespace: string;
  /** The Factory resource's name. */
  name: string;
  /** The factory's files, committed to a git remote the Factory follows. */
  files: Record<string, string>;
  /** Secrets created in the namespace first: name → value (the Secret's `value` key). */
  secrets?: Record<string, string>;
  jobs?: Partial<JobSettings>;
  /** The server's configuration beyond the test defaults. */
  config?: Partial<Config>;
}

/** Starts a JobFactory; the engine is PostgreSQL when AGENTYARD_TEST_ENGINES says only it, else PGlite. */
export async function startJobFactory(availability: Availability, options: JobFactoryOptions): Promise<JobFactory> {
  const { namespace, name } = options;
  const k8s = await startKubernetes(availability);
  const parts: { op?: TestOperator; remote?: GitRemote } = {};
  const stop = async () => {
    try {
      await parts.op?.stop();
    } finally {
      parts.remote?.close();
      await k8s.stop();
    }
  };
  try {
    const batch = k8s.kubeConfig.makeApiClient(BatchV1Api);
    await k8s.kubectl(['apply', '-f', path.join(import.meta.dirname, '../../crds')]);
    await k8s.crdEstablished('factories.agentyard.dev');
    await createNamespace(k8s, namespace);
    for (const [secret, value] of Object.entries(options.secrets ?? {}))
      await putSecret(k8s, namespace, secret, { value });
    const op = await startTestOperator(
      k8s,
      process.env.AGENTYARD_TEST_ENGINES === 'postgres' ? 'postgres' : 'pglite',
      namespace,
      options.jobs ?? {},
      options.config ? { config: options.config } : {},
    );
    parts.op = op;
    const remote = await createGitRemote();
    parts.remote = remote;
    await remote.write(options.files);
    await remote.commitAndPush(`${name} factory`);
    await k8s.kubectl(
      ['apply', '-f', '-'],
      factoryManifest(namespace, name, { source: { git: { url: `file://${remote.bare}`, pollInterval: '1s' } } }),
    );
    const factory = await whenKubernetesTold(
      k8s,
      namespace,
      async () => {
        const f = await getFactory(k8s, namespace, name);
        return condition(f, 'Ready')?.status === 'True' ? f : undefined;
      },
      30_000,
      'the Factory to be Ready',
      op.operator.server.ctx.bus,
    );
    const secret = await clients(k8s).core.readNamespacedSecret({ name: 'agentyard-api-key', namespace });
    const teamKey = Buffer.from(secret.data!.token!, 'base64').toString('utf8');
    return {
      k8s,
      op,
      remote,
      batch,
      factory,
      teamKey,
      async api(method, url, body) {
        const res = await fetch(`${op.url}/api/v1${url}`, {
          method,
          headers: {
            authorization: `Bearer ${teamKey}`,
            ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          },
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        });
        return { status: res.status, body: (await res.json()) as any };
      },
      jobOf: (runId) =>
        whenKubernetesTold(
          k8s,
          namespace,
          async () => {
            const list = await batch.listNamespacedJob({ namespace, labelSelector: `agentyard.dev/run-id=${runId}` });
            const job = list.items[0];
            return job && job.spec?.suspend === false ? job : undefined;
          },
          20_000,
          `the Job of run ${runId}`,
          op.operator.server.ctx.bus,
        ),
      setJobStatus: (job, status) =>
        k8s.kubectl([
          'patch',
          'job',
          job.metadata!.name!,
          '-n',
          namespace,
          '--subresource=status',
          '--type=merge',
          '-p',
          JSON.stringify({ status }),
        ]),
      told: (check, timeoutMs, what) =>
        whenKubernetesTold(k8s, namespace, check, timeoutMs, what, op.operator.server.ctx.bus),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
