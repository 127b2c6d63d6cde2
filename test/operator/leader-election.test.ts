/**
 * Two `agentyard operator` processes on one PostgreSQL database and one real API server: one leads (and
 * alone reconciles), both serve; when the leader stops, the other takes the Lease over and reconciles; a
 * leader whose Lease is taken away stops its controllers and exits 1.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateElectionOptions } from '../../src/operator/leader-election.ts';
import { generateApiKey } from '../../src/identity/api-keys.ts';
import { createTestDatabase, ENGINES } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';
import { TEST_MASTER_KEY } from '../support/server.ts';
import { createGitRemote } from '../sources/git-fixture.ts';
import type { GitRemote } from '../sources/git-fixture.ts';
import { REQUIRE_KUBERNETES, kubernetesAvailability, startKubernetes, whenKubernetesTold } from './k8s.ts';
import type { KubernetesTestEnv } from './k8s.ts';
import {
  baseFiles,
  condition,
  whenFactory,
  createNamespace,
  factoryManifest,
  getFactory,
  webhookYaml,
  putSecret,
} from './support.ts';
import { outputMatches, pollUntil } from '../support/signals.ts';

const availability = kubernetesAvailability();
const ROOT = path.resolve(import.meta.dirname, '../..');

describe('leader election options', () => {
  const base = {
    identity: 'a',
    leaseDurationMs: 15_000,
    renewDeadlineMs: 10_000,
    retryPeriodMs: 2_000,
    jitterFactor: 1.2,
  };
  it('accepts leaseDuration > renewDeadline > jitter × retryPeriod', () => {
    expect(() => validateElectionOptions(base)).not.toThrow();
  });
  it.each([
    [{ leaseDurationMs: 10_000 }, /leaseDuration must be greater than renewDeadline/],
    [{ renewDeadlineMs: 2_400 }, /renewDeadline must be greater than jitter × retryPeriod/],
    [{ identity: '' }, /identity/],
    [{ retryPeriodMs: 0 }, /positive/],
  ])('refuses %o', (change, message) => {
    expect(() => validateElectionOptions({ ...base, ...change })).toThrow(message);
  });
});

if (availability.missing && REQUIRE_KUBERNETES) {
  describe('two operator processes', () => {
    it('has the Kubernetes test environment (CI)', () => {
      throw new Error(`CI=true but ${availability.missing}`);
    });
  });
}

interface OperatorProcess {
  identity: string;
  child: ChildProcess;
  url: Promise<string>;
  exited: Promise<number | null>;
  log: string[];
}

describe.skipIf(availability.missing !== undefined || !ENGINES.includes('postgres'))(
  'two operator processes on PostgreSQL',
  () => {
    const namespace = 'election';
    let k8s: KubernetesTestEnv;
    let database: TestDatabase;
    let remote: GitRemote;
    const processes: OperatorProcess[] = [];
    const adminKey = generateApiKey();

    const dataDirs: string[] = [];
    const startProcess = (identity: string): OperatorProcess => {
      const dataDir = mkdtempSync(path.join(tmpdir(), `agentyard-${identity}-`));
      dataDirs.push(dataDir);
      const child = spawn(
        process.execPath,
        [path.join(ROOT, 'bin/agentyard.js'), 'operator', '--port', '0', '--host', '127.0.0.1'],
        {
          cwd: ROOT,
          env: {
            ...process.env,
            KUBECONFIG: k8s.kubeconfig,
            DATABASE_URL: database.url!,
            AGENTYARD_DATA_DIR: dataDir,
            AGENTYARD_MASTER_KEY: TEST_MASTER_KEY,
            AGENTYARD_BOOTSTRAP_API_KEY: adminKey,
            AGENTYARD_NAMESPACE: namespace,
            AGENTYARD_WATCH_NAMESPACE: namespace,
            AGENTYARD_IDENTITY: identity,
            AGENTYARD_LEASE_DURATION_SECONDS: '4',
            AGENTYARD_LEASE_RENEW_DEADLINE_SECONDS: '3',
            AGENTYARD_LEASE_RETRY_PERIOD_SECONDS: '0.5',
            LOG_LEVEL: 'info',
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      const log: string[] = [];
      let resolveUrl: (url: string) => void;
      const url = new Promise<string>((resolve) => (resolveUrl = resolve));
      const onData = (chunk: Buffer): void => {
        for (const line of chunk.toString().split('\n')) {
          if (!line.trim()) continue;
          log.push(line);
          const match = /listening on (http:\/\/[^ ;"]+)/.exec(line);
          if (match) resolveUrl(match[1]!);
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      const p = { identity, child, url, exited, log };
      processes.push(p);
      return p;
    };

    const holder = async (): Promise<string | undefined> => {
      const api = k8s.kubeConfig.makeApiClient(CoordinationV1Api);
      const lease = await api.readNamespacedLease({ name: 'agentyard-operator', namespace }).catch(() => undefined);
      return lease?.spec?.holderIdentity ?? undefined;
    };
    const factory = () => getFactory(k8s, namespace, 'shared');

    beforeAll(async () => {
      k8s = await startKubernetes(availability);
      await k8s.kubectl(['apply', '-f', path.join(ROOT, 'crds')]);
      await k8s.crdEstablished('factories.agentyard.dev');
      await createNamespace(k8s, namespace);
      await putSecret(k8s, namespace, 'alerts-token', { value: 'token-one' });
      database = await createTestDatabase('postgres');
      remote = await createGitRemote();
      await remote.write({ ...baseFiles(), 'webhooks/alerts.yaml': webhookYaml('alerts-token') });
      await remote.commitAndPush('initial tree');
    }, 120_000);

    afterAll(async () => {
      for (const p of processes) {
        if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
        await p.exited;
      }
      for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
      remote?.close();
      await database?.close();
      await k8s?.stop();
    });

    it('elects one leader; both processes serve the ingress and the API', async () => {
      const a = startProcess('operator-a');
      await a.url;
      await whenKubernetesTold(
        k8s,
        namespace,
        async () => (await holder()) === 'operator-a',
        20_000,
        'operator-a to hold the lease',
      );
      const b = startProcess('operator-b');
      const urls = [await a.url, await b.url];
      for (const url of urls) {
        expect((await fetch(`${url}/healthz`)).status).toBe(200);
        // ready once the leader's informers have synced, a moment after the port opens on a busy machine
        await pollUntil(async () => (await fetch(`${url}/readyz`)).status === 200, {
          what: `${url}/readyz to answer 200 (an operator process tells nothing when its informers synced)`,
          everyMs: 200,
          timeoutMs: 30_000,
        });
        const me = await fetch(`${url}/api/v1/whoami`, { headers: { authorization: `Bearer ${adminKey}` } });
        expect(me.status).toBe(200);
      }
      // B has tried the lease and found A holding it; the lease stays with A (B never leads: checked below).
      await outputMatches(b.child.stdout!, /the leader is operator-a/, {
        what: 'operator-b to see operator-a lead',
        sofar: () => b.log.join('\n'),
        timeoutMs: 20_000,
      });
      expect(await holder()).toBe('operator-a');

      await k8s.kubectl(
        ['apply', '-f', '-'],
        factoryManifest(namespace, 'shared', {
          source: { git: { url: `file://${remote.bare}`, pollInterval: '1s' } },
          executor: 'service',
        }),
      );
      const ready = await whenFactory(
        k8s,
        namespace,
        'shared',
        (f) => condition(f, 'Ready')?.status === 'True',
        'the Factory to be Ready',
        30_000,
      );
      // Ingress on the follower serves the webhook the leader applied.
      const res = await fetch(ready.status!.webhooks![0]!.ingressUrl.replace(await a.url, await b.url), {
        method: 'POST',
        headers: { authorization: 'Bearer token-one', 'content-type': 'application/json' },
        body: '{}',
      });
      expect(res.status).toBe(202);
      expect(a.log.some((l) => l.includes('became the leader'))).toBe(true);
      expect(b.log.some((l) => l.includes('became the leader'))).toBe(false);
    }, 120_000);

    it('fails over when the leader stops: the lease is released and the other process reconciles', async () => {
      const [a, b] = processes;
      a!.child.kill('SIGTERM');
      expect(await a!.exited).toBe(0);
      expect(a!.log.some((l) => l.includes('released the leader lease'))).toBe(true);
      await whenKubernetesTold(
        k8s,
        namespace,
        async () => (await holder()) === 'operator-b',
        10_000,
        'operator-b to take the lease',
      );
      const revision = `main@sha1:${await (
        async () => {
          await remote.write({ 'factory.yaml': `${baseFiles()['factory.yaml']}description: after failover\n` });
          return remote.commitAndPush('after failover');
        }
      )()}`;
      await whenKubernetesTold(
        k8s,
        namespace,
        async () => (await factory())?.status?.appliedRevision === revision,
        30_000,
        'the new leader to apply the next revision',
      );
      expect(b!.log.some((l) => l.includes('became the leader'))).toBe(true);
    }, 90_000);

    it('stops a leader whose lease is taken away (exit 1), so two processes never reconcile at once', async () => {
      const b = processes[1]!;
      const api = k8s.kubeConfig.makeApiClient(CoordinationV1Api);
      // The leader renews meanwhile: a replace of the version read before a renewal is refused (409), so read again.
      for (let attempt = 1; ; attempt++) {
        const lease = await api.readNamespacedLease({ name: 'agentyard-operator', namespace });
        const now = new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z') as unknown as Date;
        try {
          await api.replaceNamespacedLease({
            name: 'agentyard-operator',
            namespace,
            body: {
              ...lease,
              spec: {
                ...lease.spec,
                holderIdentity: 'intruder',
                leaseDurationSeconds: 60,
                renewTime: now,
                acquireTime: now,
              },
            },
          });
          break;
        } catch (err) {
          if ((err as { code?: number }).code !== 409 || attempt >= 20) throw err;
        }
      }
      expect(await b.exited).toBe(1);
      expect(b.log.some((l) => l.includes('leader election lost'))).toBe(true);
    });
  },
);
