/**
 * `agentyard operator` on the embedded engine, as a real OS process against a real API server: when its
 * PGlite thread dies it logs why and exits 1, so that Kubernetes restarts the pod. The process runs
 * bin/agentyard.js behind a small entry script whose only addition is a SIGUSR2 handler that ends the thread
 * as a crash would (the test seam of src/store/pglite-thread.ts).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeEntryWithPgliteSeam } from '../support/pglite-seam.ts';
import { TEST_MASTER_KEY } from '../support/server.ts';
import { REQUIRE_KUBERNETES, kubernetesAvailability, startKubernetes } from './k8s.ts';
import type { KubernetesTestEnv } from './k8s.ts';
import { createNamespace } from './support.ts';
import { pollUntil } from '../support/signals.ts';

const availability = kubernetesAvailability();
const ROOT = path.resolve(import.meta.dirname, '../..');

if (availability.missing && REQUIRE_KUBERNETES) {
  describe('operator without its database', () => {
    it('has the Kubernetes test environment (CI)', () => {
      throw new Error(`CI=true but ${availability.missing}`);
    });
  });
}

describe.skipIf(availability.missing !== undefined)('agentyard operator on the embedded engine', () => {
  const namespace = 'db-lost';
  let k8s: KubernetesTestEnv;
  let dir: string;
  let child: ChildProcess | undefined;

  beforeAll(async () => {
    k8s = await startKubernetes(availability);
    await k8s.kubectl(['apply', '-f', path.join(ROOT, 'crds')]);
    await createNamespace(k8s, namespace);
    dir = mkdtempSync(path.join(tmpdir(), 'agentyard-operator-lost-'));
  }, 120_000);

  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await k8s?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('exits 1, naming the cause, when its PGlite thread dies', async () => {
    const entry = writeEntryWithPgliteSeam(dir);
    child = spawn(
      process.execPath,
      [entry, 'operator', '--port', '0', '--host', '127.0.0.1', '--data-dir', path.join(dir, 'data')],
      {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          KUBECONFIG: k8s.kubeconfig,
          AGENTYARD_MASTER_KEY: TEST_MASTER_KEY,
          AGENTYARD_NAMESPACE: namespace,
          AGENTYARD_WATCH_NAMESPACE: namespace,
          AGENTYARD_IDENTITY: 'operator-lost',
          LOG_LEVEL: 'info',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let listening: (url: string) => void = () => {};
    const url = new Promise<string>((resolve) => (listening = resolve));
    const collect = (d: Buffer): void => {
      out += d.toString();
      const match = /listening on (http:\/\/[^ ;"]+)/.exec(out);
      if (match) listening(match[1]!);
    };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    const exited = new Promise<number | NodeJS.Signals | null>((resolve) =>
      child!.once('exit', (code, signal) => resolve(code ?? signal)),
    );

    const base = await Promise.race([
      url,
      exited.then(() => Promise.reject(new Error(`operator exited before listening:\n${out}`))),
    ]);
    // ready once the informers have synced, which takes a moment after the port opens on a busy machine
    await pollUntil(async () => (await fetch(`${base}/readyz`)).status === 200, {
      what: "the operator process's /readyz to answer 200",
      everyMs: 200,
      timeoutMs: 30_000,
    });
    child.kill('SIGUSR2');
    expect(await exited).toBe(1);
    const fatal = out.split('\n').find((line) => line.includes('the database engine has stopped'));
    expect(fatal, out).toBeDefined();
    expect(JSON.parse(fatal!)).toMatchObject({
      level: 60,
      msg: expect.stringMatching(/PGlite thread has stopped \(exit 1\)/),
    });
  }, 90_000);
});
