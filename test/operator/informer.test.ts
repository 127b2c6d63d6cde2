/**
 * An informer that cannot list (the CRD is not installed yet) restarts with backoff, and the leader reports
 * not ready until its caches sync. An informer stopped while it starts watches nothing after.
 */
import path from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.ts';
import { Informer } from '../../src/operator/informer.ts';
import { REQUIRE_KUBERNETES, eventually, kubernetesAvailability, startKubernetes } from './k8s.ts';
import type { KubernetesTestEnv } from './k8s.ts';
import { createNamespace, startTestOperator } from './support.ts';
import type { TestOperator } from './support.ts';

const availability = kubernetesAvailability();
const ROOT = path.resolve(import.meta.dirname, '../..');

if (availability.missing && REQUIRE_KUBERNETES) {
  describe('informer restarts', () => {
    it('has the Kubernetes test environment (CI)', () => {
      throw new Error(`CI=true but ${availability.missing}`);
    });
  });
}

describe.skipIf(availability.missing !== undefined)('informer restarts', () => {
  let k8s: KubernetesTestEnv;
  let op: TestOperator;

  beforeAll(async () => {
    k8s = await startKubernetes(availability);
    await createNamespace(k8s, 'restarts');
    op = await startTestOperator(k8s, 'pglite', 'restarts', {}, { waitForSync: false });
  }, 120_000);

  afterAll(async () => {
    await op?.stop();
    await k8s?.stop();
  });

  it('reports the leader not ready while the Factory informer cannot list, and ready once it restarted and synced', async () => {
    await eventually(() => op.operator.isLeader(), 20_000, 'leadership');
    const down = await eventually(
      async () => {
        const res = await fetch(`${op.url}/readyz`);
        return res.status === 503 ? ((await res.json()) as { checks: Record<string, string> }) : undefined;
      },
      10_000,
      '/readyz to answer 503',
    );
    expect(down.checks.controllers).toContain('factories');
    // Not synced answers 503 at once; the list error is recorded when the first list attempt fails.
    const lastError = await eventually(() => op.operator.factories()!.informer.lastError, 10_000, 'the list error');
    expect(lastError).toMatch(/404|not found/i);

    await k8s.kubectl(['apply', '-f', path.join(ROOT, 'crds')]);
    await eventually(() => op.operator.factories()!.informer.synced, 60_000, 'the informer to restart and sync');
    const up = await fetch(`${op.url}/readyz`);
    expect(up.status).toBe(200);
  });

  it('watches nothing once stopped, even when stopped while its first list was under way', async () => {
    const core = k8s.kubeConfig.makeApiClient(CoreV1Api);
    const configMaps = (name: string) =>
      new Informer<V1ConfigMap>({
        name,
        config: k8s.kubeConfig,
        path: '/api/v1/namespaces/restarts/configmaps',
        list: () => core.listNamespacedConfigMap({ namespace: 'restarts' }),
        log: createLogger('silent'),
      });
    const watching = configMaps('watching');
    await watching.start();
    const stopped = configMaps('stopped');
    // stopped before its list answered: ListWatch opens its watch after that (the start is under way)
    const starting = stopped.start();
    await stopped.stop();
    await starting;
    try {
      await core.createNamespacedConfigMap({
        namespace: 'restarts',
        body: { metadata: { name: 'after-stop' }, data: { a: '1' } },
      });
      await eventually(() => watching.get('after-stop', 'restarts'), 10_000, 'the running informer to see it');
      // the same event reaches every watch of the API server at once; a little slack for the event loop
      await new Promise((r) => setTimeout(r, 300));
      expect(stopped.get('after-stop', 'restarts')).toBeUndefined();
    } finally {
      await watching.stop();
    }
  });
});
