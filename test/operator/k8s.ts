/**
 * A real Kubernetes API server (kube-apiserver + etcd on loopback) for the operator and chart tests, started
 * with the shared recipe (`k8s-test-env.sh`) in a fresh run directory on free ports, and stopped after.
 * Without the script or its binaries the tests skip locally and fail in CI (`CI=true`), saying why.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';

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
      const deadline = Date.now() + 60_000;
      for (;;) {
        try {
          await testEnv.kubectl(['wait', '--for', 'condition=established', '--timeout=60s', `crd/${name}`]);
          return;
        } catch (err) {
          // A CRD read before the API server set any condition makes kubectl's wait fail at once, not wait.
          if (!/status\.conditions accessor error/.test(String(err)) || Date.now() > deadline) throw err;
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      }
    },
    async stop() {
      await run('bash', [availability.script, 'stop', availability.cacheDir], { env: scriptEnv }).catch(() => {});
      rmSync(runDir, { recursive: true, force: true });
    },
  };
  return testEnv;
}

/** Polls `check` until it answers a value other than undefined/false, or fails with the last error after `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 20_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out waiting for ${what}${lastError ? `: ${lastError instanceof Error ? lastError.message : String(lastError)}` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

export function readCrdYaml(): string {
  return readFileSync(path.join(ROOT, 'crds', 'factories.agentyard.dev.yaml'), 'utf8');
}
