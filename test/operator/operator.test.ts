import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { createGitRemote } from '../sources/git-fixture.ts';
import type { GitRemote } from '../sources/git-fixture.ts';
import type { FactoryResource } from '../../src/operator/factory-resource.ts';
import { REQUESTED_AT_ANNOTATION } from '../../src/operator/factory-controller.ts';
import { REQUIRE_KUBERNETES, eventually, kubernetesAvailability, startKubernetes, whenKubernetesTold } from './k8s.ts';
import type { KubernetesTestEnv } from './k8s.ts';
import {
  baseFiles,
  clients,
  condition,
  whenFactory,
  createNamespace,
  factoryEvents,
  factoryManifest,
  getFactory,
  postJson,
  putSecret,
  startTestOperator,
  webhookYaml,
} from './support.ts';
import type { TestOperator } from './support.ts';

const availability = kubernetesAvailability();
const ROOT = path.resolve(import.meta.dirname, '../..');

if (availability.missing && REQUIRE_KUBERNETES) {
  describe('operator against a real Kubernetes API server', () => {
    it('has the Kubernetes test environment (CI)', () => {
      throw new Error(`CI=true but ${availability.missing}`);
    });
  });
}

describe.skipIf(availability.missing !== undefined)('operator against a real Kubernetes API server', () => {
  let k8s: KubernetesTestEnv;

  beforeAll(async () => {
    k8s = await startKubernetes(availability);
    await k8s.kubectl(['apply', '-f', path.join(ROOT, 'crds')]);
    await k8s.crdEstablished('factories.agentyard.dev');
  }, 120_000);

  afterAll(async () => {
    await k8s?.stop();
  });

  describe.each(ENGINES)('on %s', (engine) => {
    const namespace = `factories-${engine}`;
    let op: TestOperator;
    let remote: GitRemote;
    let firstRevision: string;
    let hookUrl: string;

    const factory = () => getFactory(k8s, namespace, 'alerts');
    /** When the operator last fetched the factory's source (each poll moves it). */
    const fetchedAt = async (): Promise<number> => {
      const res = await op.database.db.query<{ fetched_at: Date | null }>(
        'SELECT fetched_at FROM factories WHERE id = $1',
        [(await factory())!.status!.factoryId!],
      );
      return res.rows[0]?.fetched_at?.getTime() ?? 0;
    };
    const commit = async (files: Record<string, string>, message: string, remove: string[] = []): Promise<string> => {
      if (remove.length) await remote.remove(...remove);
      await remote.write(files);
      return `main@sha1:${await remote.commitAndPush(message)}`;
    };

    beforeAll(async () => {
      await createNamespace(k8s, namespace);
      op = await startTestOperator(k8s, engine, namespace);
      remote = await createGitRemote();
    }, 60_000);

    afterAll(async () => {
      await op?.stop();
      remote?.close();
    });

    it('makes a Factory pointing at a git repository Ready, with its revision and webhooks in status', async () => {
      await putSecret(k8s, namespace, 'alerts-token', { value: 'token-one' });
      await remote.write({ ...baseFiles(), 'webhooks/alerts.yaml': webhookYaml('alerts-token') });
      firstRevision = `main@sha1:${await remote.commitAndPush('initial tree')}`;
      await k8s.kubectl(
        ['apply', '-f', '-'],
        factoryManifest(namespace, 'alerts', {
          source: { git: { url: `file://${remote.bare}`, pollInterval: '1s' } },
          executor: 'service',
        }),
      );

      const ready = await whenFactory(
        k8s,
        namespace,
        'alerts',
        (f) => condition(f, 'Ready')?.status === 'True',
        'Ready=True',
        30_000,
      );
      const status = ready.status!;
      expect(status.appliedRevision).toBe(firstRevision);
      expect(status.attemptedRevision).toBe(firstRevision);
      expect(status.observedGeneration).toBe(ready.metadata!.generation);
      expect(status.factoryId).toMatch(/^fac_/);
      expect(condition(ready, 'Applied')).toMatchObject({
        status: 'True',
        reason: 'Applied',
        message: `Applied revision: ${firstRevision}`,
      });
      expect(condition(ready, 'SourceReady')).toMatchObject({ status: 'True', reason: 'Succeeded' });
      expect(condition(ready, 'Ready')).toMatchObject({
        reason: 'Succeeded',
        observedGeneration: ready.metadata!.generation,
      });
      expect(status.webhookCount).toBe(1);
      expect(status.webhooks).toEqual([
        {
          name: 'alerts',
          uid: expect.stringMatching(/^wh_[0-9a-z]{26}$/),
          ingressUrl: expect.any(String),
          enabled: true,
        },
      ]);
      hookUrl = status.webhooks![0]!.ingressUrl;
      expect(hookUrl).toBe(`${op.url}/webhooks/w/${status.webhooks![0]!.uid}`);
      expect(ready.metadata!.finalizers).toContain('agentyard.dev/finalizer');

      // The printer columns, as kubectl shows them.
      const table = await k8s.kubectl(['get', 'factories', '-n', namespace]);
      expect(table).toMatch(/^NAME\s+READY\s+REVISION\s+WEBHOOKS\s+AGE/m);
      expect(table).toMatch(
        new RegExp(`^alerts\\s+True\\s+${firstRevision.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s+1\\s`, 'm'),
      );

      const events = await whenKubernetesTold(
        k8s,
        namespace,
        async () => {
          const list = await factoryEvents(k8s, namespace, ready.metadata!.uid!);
          return list.some((e) => e.reason === 'Applied') ? list : undefined;
        },
        10_000,
        'an Applied event',
      );
      expect(events.find((e) => e.reason === 'Applied')).toMatchObject({
        type: 'Normal',
        message: `Applied revision: ${firstRevision}`,
      });
    });

    it('gives the namespace its own team, whose API key is in a Secret of the namespace', async () => {
      const secret = await clients(k8s).core.readNamespacedSecret({ name: 'agentyard-api-key', namespace });
      const key = Buffer.from(secret.data!.token!, 'base64').toString('utf8');
      const res = await fetch(`${op.url}/api/v1/factories`, { headers: { authorization: `Bearer ${key}` } });
      const body = (await res.json()) as { factories?: { name: string }[]; items?: { name: string }[] };
      expect(res.status).toBe(200);
      expect(JSON.stringify(body)).toContain('"alerts"');
      // The instance admin's default team does not hold it.
      const admin = await fetch(`${op.url}/api/v1/factories`, { headers: { authorization: `Bearer ${op.adminKey}` } });
      expect(JSON.stringify(await admin.json())).not.toContain('"alerts"');
    });

    it('accepts a POST to the webhook URL from status (202)', async () => {
      const res = await postJson(hookUrl, { severity: 'critical' }, { authorization: 'Bearer token-one' });
      expect(res.status).toBe(202);
      expect(res.body.delivery_id).toMatch(/^dlv_/);
    });

    it('refuses a bad commit with Applied=False naming file and line, while the old webhook keeps serving', async () => {
      const bad = await commit(
        { 'webhooks/broken.yaml': 'authMode: nope\nsecretName: alerts-token\n' },
        'a broken webhook',
      );
      const refused = await whenFactory(
        k8s,
        namespace,
        'alerts',
        (f) => f?.status?.attemptedRevision === bad && condition(f, 'Applied')?.status === 'False',
        'the bad revision to be refused',
        30_000,
      );
      const applied = condition(refused, 'Applied')!;
      expect(applied.reason).toBe('ValidationFailed');
      expect(applied.message).toContain(bad);
      expect(applied.message).toMatch(/webhooks\/broken\.yaml:1:\d+/);
      const ready = condition(refused, 'Ready')!;
      expect(ready.status).toBe('False');
      expect(ready.message).toMatch(/webhooks\/broken\.yaml:1:\d+/);
      expect(ready.message).toContain(`still serving ${firstRevision}`);
      expect(refused.status!.appliedRevision).toBe(firstRevision);
      expect(refused.status!.errors![0]).toMatchObject({ file: 'webhooks/broken.yaml', line: 1, severity: 'error' });
      expect(refused.status!.webhooks!.map((w) => w.name)).toEqual(['alerts']);

      expect((await postJson(hookUrl, { severity: 'high' }, { authorization: 'Bearer token-one' })).status).toBe(202);
      const events = await whenKubernetesTold(
        k8s,
        namespace,
        async () => {
          const list = await factoryEvents(k8s, namespace, refused.metadata!.uid!);
          return list.some((e) => e.reason === 'ValidationFailed') ? list : undefined;
        },
        10_000,
        'a ValidationFailed event',
      );
      expect(events.find((e) => e.reason === 'ValidationFailed')).toMatchObject({ type: 'Warning' });
      expect(events.find((e) => e.reason === 'ValidationFailed')!.message).toMatch(/webhooks\/broken\.yaml:1:\d+/);
    });

    it('reports a missing Secret as an apply error and an Event; creating it and asking for a reconcile applies', async () => {
      const revision = await commit({ 'webhooks/deploys.yaml': webhookYaml('deploys-token') }, 'a deploys webhook', [
        'webhooks/broken.yaml',
      ]);
      const refused = await whenKubernetesTold(
        k8s,
        namespace,
        async () => {
          const f = await factory();
          return f?.status?.attemptedRevision === revision && condition(f, 'Applied')?.status === 'False'
            ? f
            : undefined;
        },
        30_000,
        'the revision naming a missing Secret to be refused',
      );
      expect(refused.status!.errors!.find((e) => e.severity === 'error')).toMatchObject({
        file: 'webhooks/deploys.yaml',
        line: 2,
      });
      expect(condition(refused, 'Ready')!.message).toMatch(/webhooks\/deploys\.yaml:2:\d+/);
      const events = await whenKubernetesTold(
        k8s,
        namespace,
        async () => {
          const list = await factoryEvents(k8s, namespace, refused.metadata!.uid!);
          return list.find((e) => e.reason === 'SecretNotFound');
        },
        10_000,
        'a SecretNotFound event',
      );
      expect(events.message).toContain(`Secret ${namespace}/deploys-token`);

      await putSecret(k8s, namespace, 'deploys-token', { value: 'deploys-one' });
      await k8s.kubectl([
        'annotate',
        '-n',
        namespace,
        'factory/alerts',
        `${REQUESTED_AT_ANNOTATION}=first`,
        '--overwrite',
      ]);
      const ready = await whenFactory(
        k8s,
        namespace,
        'alerts',
        (f) => f?.status?.appliedRevision === revision && condition(f, 'Ready')?.status === 'True',
        'the retried revision to apply',
        30_000,
      );
      expect(ready.status!.lastHandledReconcileAt).toBe('first');
      expect(ready.status!.webhooks!.map((w) => w.name)).toEqual(['alerts', 'deploys']);
    });

    it('takes a changed Secret into account at the next apply, not before', async () => {
      await putSecret(k8s, namespace, 'alerts-token', { value: 'token-two' });
      // Polls of the same revision change nothing: two polls end after the change (each fetch moves
      // fetched_at), so the first one's whole reconcile is over.
      const seen = new Set([await fetchedAt()]);
      await eventually(async () => seen.add(await fetchedAt()).size >= 3, 20_000, 'two polls after the Secret changed');
      expect((await postJson(hookUrl, {}, { authorization: 'Bearer token-one' })).status).toBe(202);
      const revision = await commit(
        { 'factory.yaml': `${baseFiles()['factory.yaml']}description: rotated\n` },
        'describe the factory',
      );
      await whenKubernetesTold(
        k8s,
        namespace,
        async () => (await factory())?.status?.appliedRevision === revision,
        30_000,
        'the next revision to apply',
      );
      expect((await postJson(hookUrl, {}, { authorization: 'Bearer token-one' })).status).toBe(401);
      expect((await postJson(hookUrl, {}, { authorization: 'Bearer token-two' })).status).toBe(202);
    });

    it('stops applying while suspended, and applies the newest revision when resumed', async () => {
      const before = (await factory())!.status!.appliedRevision;
      await k8s.kubectl([
        'patch',
        '-n',
        namespace,
        'factory/alerts',
        '--type=merge',
        '-p',
        '{"spec":{"suspend":true}}',
      ]);
      await whenKubernetesTold(
        k8s,
        namespace,
        async () => condition(await factory(), 'Ready')?.reason === 'Suspended',
        20_000,
        'Ready to say Suspended',
      );
      const next = await commit(
        { 'factory.yaml': `${baseFiles()['factory.yaml']}description: while suspended\n` },
        'while suspended',
      );
      // Not even a reconcile asked for by annotation applies it while suspended.
      await k8s.kubectl([
        'annotate',
        '-n',
        namespace,
        'factory/alerts',
        `${REQUESTED_AT_ANNOTATION}=while-suspended`,
        '--overwrite',
      ]);
      const handled = await whenFactory(
        k8s,
        namespace,
        'alerts',
        (f) => f?.status?.lastHandledReconcileAt === 'while-suspended',
        'the request to be handled',
        20_000,
      );
      expect(handled.status!.appliedRevision).toBe(before);
      expect(next).not.toBe(before);
      await k8s.kubectl([
        'patch',
        '-n',
        namespace,
        'factory/alerts',
        '--type=merge',
        '-p',
        '{"spec":{"suspend":false}}',
      ]);
      await whenKubernetesTold(
        k8s,
        namespace,
        async () => (await factory())?.status?.appliedRevision === next,
        30_000,
        'the revision to apply after resuming',
      );
      expect(condition(await factory(), 'Ready')).toMatchObject({ status: 'True', reason: 'Succeeded' });
    });

    it('marks an invalid spec Stalled without retrying it', async () => {
      await k8s.kubectl(
        ['apply', '-f', '-'],
        factoryManifest(namespace, 'bad-url', { source: { git: { url: 'ftp://example.com/repo.git' } } }),
      );
      const stalled = await whenFactory(
        k8s,
        namespace,
        'bad-url',
        (f) => condition(f, 'Stalled')?.status === 'True',
        'Stalled=True',
        20_000,
      );
      expect(condition(stalled, 'Stalled')).toMatchObject({ reason: 'InvalidSpec' });
      expect(condition(stalled, 'Stalled')!.message).toContain('spec.source.git.url');
      expect(condition(stalled, 'Ready')).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
      await k8s.kubectl(['delete', '-n', namespace, 'factory/bad-url', '--wait=true', '--timeout=20s']);
    });

    it('reports a missing credentials Secret on SourceReady', async () => {
      await k8s.kubectl(
        ['apply', '-f', '-'],
        factoryManifest(namespace, 'private', {
          source: {
            git: { url: 'https://git.example.com/acme/private.git', credentialsSecretRef: { name: 'private-repo' } },
          },
        }),
      );
      const failing = await whenFactory(
        k8s,
        namespace,
        'private',
        (f) => condition(f, 'SourceReady')?.status === 'False',
        'SourceReady=False',
        20_000,
      );
      expect(condition(failing, 'SourceReady')).toMatchObject({ reason: 'CredentialsNotFound' });
      expect(condition(failing, 'SourceReady')!.message).toContain('private-repo/token');
      expect(condition(failing, 'Ready')).toMatchObject({ status: 'False', reason: 'CredentialsNotFound' });
      await k8s.kubectl(['delete', '-n', namespace, 'factory/private', '--wait=true', '--timeout=20s']);
    });

    it('runs the finalizer on delete: webhooks deleted, runs stopped, nothing left behind', async () => {
      const f = (await factory()) as FactoryResource;
      const factoryId = f.status!.factoryId!;
      const { db } = op.database;
      const team = (await db.query<{ team_id: string }>('SELECT team_id FROM factories WHERE id = $1', [factoryId]))
        .rows[0]!.team_id;
      const { run } = await op.operator.server.services.runs.create(
        { teamId: team, prompt: 'work', config: {}, source: 'FACTORY', factoryId, creator: null },
        { within: db },
      );

      await k8s.kubectl(['delete', '-n', namespace, 'factory/alerts', '--wait=true', '--timeout=30s']);
      expect(await factory()).toBeUndefined();
      const hooks = (
        await db.query<{ deleted_at: Date | null }>('SELECT deleted_at FROM webhooks WHERE factory_id = $1', [
          factoryId,
        ])
      ).rows;
      expect(hooks.length).toBe(2);
      expect(hooks.every((h) => h.deleted_at !== null)).toBe(true);
      expect((await db.query('SELECT deleted_at FROM factories WHERE id = $1', [factoryId])).rows[0]).toMatchObject({
        deleted_at: expect.any(Date),
      });
      expect((await db.query('SELECT state, status_message FROM runs WHERE id = $1', [run.id])).rows[0]).toMatchObject({
        state: 'CANCELLED',
        status_message: { error_code: 'factory_deleted' },
      });
      expect((await postJson(hookUrl, {}, { authorization: 'Bearer token-two' })).status).toBe(404);
      // A Factory of the same name again is a new factory.
      await k8s.kubectl(
        ['apply', '-f', '-'],
        factoryManifest(namespace, 'alerts', { source: { git: { url: `file://${remote.bare}`, pollInterval: '0' } } }),
      );
      const again = await whenFactory(
        k8s,
        namespace,
        'alerts',
        (g) => condition(g, 'Ready')?.status === 'True',
        'the new Factory to be Ready',
        30_000,
      );
      expect(again.status!.factoryId).not.toBe(factoryId);
      await k8s.kubectl(['delete', '-n', namespace, 'factory/alerts', '--wait=true', '--timeout=30s']);
    });

    it('serves readiness with synced caches and metrics of its controllers', async () => {
      const ready = await fetch(`${op.url}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: 'ok', checks: { database: 'ok', controllers: 'ok' } });
      const metrics = await (await fetch(`${op.url}/metrics`)).text();
      expect(metrics).toMatch(
        /agentyard_reconcile_duration_seconds_count\{controller="factories",outcome="success"\} [1-9]/,
      );
      expect(metrics).toMatch(/agentyard_factory_applies_total\{result="applied"\} [1-9]/);
      expect(metrics).toMatch(/agentyard_factory_refusals_total\{reason="ValidationFailed"\} [1-9]/);
      expect(metrics).toMatch(/agentyard_workqueue_depth\{controller="factories"\} \d/);
    });
  });
});
