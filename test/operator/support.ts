import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
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
import type { KubernetesTestEnv } from './k8s.ts';
import { eventually } from './k8s.ts';

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
