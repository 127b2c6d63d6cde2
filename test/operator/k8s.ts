/**
 * A real Kubernetes API server (kube-apiserver + etcd on loopback) for the operator and chart tests, started
 * with the shared recipe (`k8s-test-env.sh`) in a fresh run directory on free ports, and stopped after.
 * Without the script or its binaries the tests skip locally and fail in CI (`CI=true`), saying why.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { KubeConfig, Watch } from '@kubernetes/client-node';
import type { Bus } from '../../src/kernel/bus.ts';
import { EXECUTIONS_ENDED_TOPIC, RUN_CHANGED_TOPIC, RUN_LIFECYCLE_TOPIC } from '../../src/kernel/topics.ts';
import { askWhenPoked, pollUntil } from '../support/signals.ts';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');

export interface KubernetesTestEnv {
  kubeconfig: string;
  kubeConfig: KubeConfig;
  /** Directory of kubectl, helm and kubeconform. */
  bin: string;
  script: string;
  cacheDir: string;
  runDir: string;
  env: Record<string, string>;
  kubectl(args: string[], input?: string): Promise<string>;
  /** Waits until a CustomResourceDefinition is Established (kubectl wait, retried while it has no conditions yet). */
  crdEstablished(name: string): Promise<void>;
  stop(): Promise<void>;
}

export interface Availability {
  script: string;
  cacheDir: string;
  /** Why the environment cannot start, if it cannot. */
  missing: string | undefined;
}

export function kubernetesAvailability(): Availability {
  const script = process.env.AGENTYARD_K8S_TEST_ENV ?? path.resolve(ROOT, '../shared/tools/k8s-test-env.sh');
  const cacheDir = process.env.K8S_TEST_CACHE_DIR ?? path.join(homedir(), '.cache', 'k8s-test-bin');
  let missing: string | undefined;
  if (!existsSync(script))
    missing = `the Kubernetes test environment script is missing (${script}; set AGENTYARD_K8S_TEST_ENV)`;
  else if (
    !['kube-apiserver', 'etcd', 'kubectl', 'helm', 'kubeconform'].every((b) =>
      existsSync(path.join(cacheDir, 'bin', b)),
    )
  ) {
    missing = `the Kubernetes test binaries are not built in ${cacheDir}/bin (run: bash ${script} install ${cacheDir})`;
  }
  return { script, cacheDir, missing };
}

/** In CI a missing environment is a failure; locally the operator tests skip. */
export const REQUIRE_KUBERNETES = process.env.CI === 'true';

function parseExports(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const match of text.matchAll(/^export (\w+)='([^']*)'$/gm)) env[match[1]!] = match[2]!;
  return env;
}

/**
 * Starts an API server. `--watch-cache=false` avoids the 429 "storage is (re)initializing" answers of the
 * first list of a new custom resource type (client-node does not retry them; the informer restarts anyway).
 */
export async function startKubernetes(availability = kubernetesAvailability()): Promise<KubernetesTestEnv> {
  if (availability.missing) throw new Error(availability.missing);
  // Free ports are picked by binding port 0 and letting go: two suites starting at once can collide. A
  // second attempt picks new ports.
  try {
    return await startOnce(availability);
  } catch {
    return startOnce(availability);
  }
}

async function startOnce(availability: Availability): Promise<KubernetesTestEnv> {
  const runDir = mkdtempSync(path.join(tmpdir(), 'agentyard-k8s-'));
  const scriptEnv: NodeJS.ProcessEnv = {
    ...process.env,
    K8S_TEST_RUN_DIR: runDir,
    K8S_TEST_APISERVER_ARGS: '--watch-cache=false',
  };
  delete scriptEnv.K8S_TEST_API_PORT;
  delete scriptEnv.K8S_TEST_ETCD_PORT;
  let out: string;
  try {
    out = (
      await run('bash', [availability.script, 'start', availability.cacheDir], { env: scriptEnv, maxBuffer: 1 << 20 })
    ).stdout;
  } catch (err) {
    rmSync(runDir, { recursive: true, force: true });
    throw new Error(`the Kubernetes API server did not start: ${(err as { stderr?: string }).stderr ?? String(err)}`);
  }
  const env = parseExports(out);
  // a test process that ends without stop() (a hook's timeout, the memory guard) leaves no API server behind
  const killOnExit = (): void => killRecorded(runDir);
  process.once('exit', killOnExit);
  const kubeconfig = env.KUBECONFIG!;
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kubeconfig);
  const bin = env.K8S_TEST_BIN ?? path.join(availability.cacheDir, 'bin');
  const testEnv: KubernetesTestEnv = {
    kubeconfig,
    kubeConfig,
    bin,
    script: availability.script,
    cacheDir: availability.cacheDir,
    runDir,
    env,
    async kubectl(args, input) {
      const child = execFile(path.join(bin, 'kubectl'), ['--kubeconfig', kubeconfig, ...args], { maxBuffer: 16 << 20 });
      if (input !== undefined) child.stdin?.end(input);
      else child.stdin?.end();
      return new Promise((resolve, reject) => {
        let stdout = '';
        let stderr = '';
        child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
        child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
        child.on('close', (code) =>
          code === 0 ? resolve(stdout) : reject(new Error(`kubectl ${args.join(' ')}: ${stderr || stdout}`)),
        );
      });
    },
    async crdEstablished(name) {
      // kubectl wait watches the CRD; read before the API server set any condition, it fails at once instead
      const answer = await pollUntil(
        async (): Promise<{ failed?: unknown } | undefined> => {
          try {
            await testEnv.kubectl(['wait', '--for', 'condition=established', '--timeout=60s', `crd/${name}`]);
            return {};
          } catch (err) {
            return /status\.conditions accessor error/.test(String(err)) ? undefined : { failed: err };
          }
        },
        { what: `CRD ${name} to have conditions`, everyMs: 200, timeoutMs: 60_000 },
      );
      if (answer.failed) throw answer.failed;
    },
    async stop() {
      await run('bash', [availability.script, 'stop', availability.cacheDir], { env: scriptEnv }).catch(() => {});
      process.off('exit', killOnExit);
      rmSync(runDir, { recursive: true, force: true });
    },
  };
  return testEnv;
}

/** Kills the processes k8s-test-env.sh recorded in `runDir` (`NAME.pid`), at once: for a process's `exit`. */
function killRecorded(runDir: string): void {
  let names: string[];
  try {
    names = readdirSync(runDir).filter((n) => n.endsWith('.pid'));
  } catch {
    return;
  }
  for (const name of names) {
    try {
      const pid = Number(readFileSync(path.join(runDir, name), 'utf8').trim());
      // still ours: its command line names this run directory (a pid may have been reused)
      if (Number.isInteger(pid) && pid > 1 && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(runDir))
        process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
}

/**
 * Polls `check` until it answers a value other than undefined/false (test/support/signals.ts pollUntil, every
 * 100 ms): an object in the Kubernetes API server or the operator's informer state, which tell the test nothing.
 */
export function eventually<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 20_000,
  what = 'condition',
): Promise<T> {
  return pollUntil(check, { what, timeoutMs, everyMs: 100 });
}

/** What a wait in a namespace watches: its Factories, Events, Jobs and Leases. */
function watchedPaths(namespace: string): string[] {
  return [
    `/apis/agentyard.dev/v1alpha1/namespaces/${namespace}/factories`,
    `/api/v1/namespaces/${namespace}/events`,
    `/apis/batch/v1/namespaces/${namespace}/jobs`,
    `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`,
  ];
}

/**
 * Resolves with what `check` answers once it answers a value: asked now and on each change the API server tells
 * on its watches of the namespace's Factories, Events, Jobs and Leases (and, given the operator's bus, each
 * step of a run it executes), never on a timer. A watch the server ends is opened again.
 */
export function whenKubernetesTold<T>(
  k8s: KubernetesTestEnv,
  namespace: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 20_000,
  what = 'condition',
  bus?: Bus,
): Promise<T> {
  let last: unknown;
  return askWhenPoked(
    (poke) => {
      let stopped = false;
      const aborts: AbortController[] = [];
      const watch = new Watch(k8s.kubeConfig);
      const open = (path: string): void => {
        if (stopped) return;
        watch
          .watch(
            path,
            { allowWatchBookmarks: false },
            () => poke(),
            () => {
              // the server ends watches now and then: open it again, and look (a change may fall in between)
              if (stopped) return;
              poke();
              setTimeout(() => open(path), 100).unref();
            },
          )
          .then(
            (abort) => (stopped ? abort.abort() : aborts.push(abort)),
            () => !stopped && setTimeout(() => open(path), 100).unref(),
          );
      };
      for (const path of watchedPaths(namespace)) open(path);
      const offs = bus
        ? [
            bus.subscribe(RUN_LIFECYCLE_TOPIC, poke),
            bus.subscribe(RUN_CHANGED_TOPIC, poke),
            bus.subscribe(EXECUTIONS_ENDED_TOPIC, poke),
          ]
        : [];
      return () => {
        stopped = true;
        for (const abort of aborts) abort.abort();
        for (const off of offs) off();
      };
    },
    // as `eventually`: a check that throws (an API server busy) is asked again at the next change
    async () => {
      try {
        const value = await check();
        last = undefined;
        return value;
      } catch (err) {
        last = err;
        return undefined;
      }
    },
    { what, timeoutMs },
  ).catch((err: unknown) => {
    throw last ? new Error(`${String(err)}: ${last instanceof Error ? last.message : String(last)}`) : err;
  });
}

export function readCrdYaml(): string {
  return readFileSync(path.join(ROOT, 'crds', 'factories.agentyard.dev.yaml'), 'utf8');
}
