/**
 * An informer that cannot list (the CRD is not installed yet) restarts with backoff, and the leader reports
 * not ready until its caches sync.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
});
