import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../kernel/log.ts';
import type { Config } from '../config.ts';
import { composeOperator, operatorServerRoles, startInOrder } from '../composition.ts';
import type { OperatorComposition } from '../composition.ts';
import { createLogger } from '../log.ts';
import { startServer } from '../server.ts';
import type { RunningServer } from '../server.ts';
import type { Db } from '../kernel/db.ts';
import type { FactoryResourceController } from './factory-controller.ts';
import type { JobExecutor } from './job-executor.ts';
import type { JobSettings } from './job-spec.ts';
import type { HarnessSettings } from './harness.ts';
import { builtinAgentSettings, harnessFor } from '../execution/settings.ts';
import { DEFAULT_JOB_SETTINGS } from './job-spec.ts';
import { kubeClients, operatorNamespace } from './kube.ts';
import { DEFAULT_ELECTION, LeaderElector, validateElectionOptions } from './leader-election.ts';
import type { ElectionClock, ElectionEnd, LeaderElectionOptions } from './leader-election.ts';

/** The election's settings (`namespace`: of the leader Lease and of the operator itself), and the operator's. */
export interface OperatorSettings
  extends Pick<
    LeaderElectionOptions,
    'namespace' | 'leaseName' | 'identity' | 'leaseDurationMs' | 'renewDeadlineMs' | 'retryPeriodMs' | 'jitterFactor'
  > {
  /** Secret each namespace team's first admin API key is written to; empty: none. */
  apiKeySecret: string;
  /** Every Factory is reconciled again this often. */
  resyncMs: number;
  /** Watch Factories (and run Jobs) of this namespace only; undefined: the whole cluster. */
  watchNamespace: string | undefined;
  jobs: JobSettings;
}

function envNumber(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number, got "${raw}"`);
  return value;
}

/** Which harness runs a Job, and the agent CLIs inside runner images (AGENTYARD_JOB_DEFAULT_HARNESS, AGENTYARD_JOB_HARNESS_<TYPE>_BIN). */
function jobHarnessSettings(env: NodeJS.ProcessEnv): HarnessSettings {
  const defaults = DEFAULT_JOB_SETTINGS.harness;
  const raw = env.AGENTYARD_JOB_DEFAULT_HARNESS?.trim().toLowerCase();
  const defaultHarness = raw ? harnessFor(raw, undefined) : defaults.defaultHarness;
  if (raw && !defaultHarness) throw new Error(`AGENTYARD_JOB_DEFAULT_HARNESS: unknown harness "${raw}"`);
  let commandArgs = defaults.commandArgs;
  if (env.AGENTYARD_JOB_HARNESS_COMMAND_ARGS) {
    const parsed: unknown = JSON.parse(env.AGENTYARD_JOB_HARNESS_COMMAND_ARGS);
    if (!Array.isArray(parsed) || !parsed.every((a) => typeof a === 'string'))
      throw new Error('AGENTYARD_JOB_HARNESS_COMMAND_ARGS must be a JSON array of strings');
    commandArgs = parsed;
  }
  return {
    defaultHarness,
    bins: {
      claude: env.AGENTYARD_JOB_HARNESS_CLAUDE_BIN || defaults.bins.claude,
      codex: env.AGENTYARD_JOB_HARNESS_CODEX_BIN || defaults.bins.codex,
      gemini: env.AGENTYARD_JOB_HARNESS_GEMINI_BIN || defaults.bins.gemini,
      command: env.AGENTYARD_JOB_HARNESS_COMMAND_BIN || defaults.bins.command,
      agentyard: env.AGENTYARD_JOB_HARNESS_AGENTYARD_BIN || defaults.bins.agentyard,
    },
    builtin: builtinAgentSettings(env),
    commandArgs,
  };
}

/** Settings from the environment (the Helm chart sets these); see docs/kubernetes.md. */
export function operatorSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): OperatorSettings {
  const seconds = (name: string, fallbackMs: number): number => envNumber(env, name, fallbackMs / 1000) * 1000;
  const settings: OperatorSettings = {
    namespace: operatorNamespace(env),
    leaseName: env.AGENTYARD_LEASE_NAME || 'agentyard-operator',
    identity:
      env.AGENTYARD_IDENTITY || `${env.POD_NAME || env.HOSTNAME || hostname()}_${randomBytes(4).toString('hex')}`,
    leaseDurationMs: seconds('AGENTYARD_LEASE_DURATION_SECONDS', DEFAULT_ELECTION.leaseDurationMs),
    renewDeadlineMs: seconds('AGENTYARD_LEASE_RENEW_DEADLINE_SECONDS', DEFAULT_ELECTION.renewDeadlineMs),
    retryPeriodMs: seconds('AGENTYARD_LEASE_RETRY_PERIOD_SECONDS', DEFAULT_ELECTION.retryPeriodMs),
    jitterFactor: DEFAULT_ELECTION.jitterFactor,
    apiKeySecret: env.AGENTYARD_NAMESPACE_API_KEY_SECRET ?? 'agentyard-api-key',
    resyncMs: seconds('AGENTYARD_RESYNC_SECONDS', 5 * 60_000),
    watchNamespace: env.AGENTYARD_WATCH_NAMESPACE || undefined,
    jobs: {
      ...DEFAULT_JOB_SETTINGS,
      defaultImage: env.AGENTYARD_JOB_DEFAULT_IMAGE || DEFAULT_JOB_SETTINGS.defaultImage,
      ttlSecondsAfterFinished: envNumber(
        env,
        'AGENTYARD_JOB_TTL_SECONDS',
        DEFAULT_JOB_SETTINGS.ttlSecondsAfterFinished,
      ),
      activeDeadlineSeconds: envNumber(
        env,
        'AGENTYARD_JOB_ACTIVE_DEADLINE_SECONDS',
        DEFAULT_JOB_SETTINGS.activeDeadlineSeconds,
      ),
      deleteFinishedJobs: env.AGENTYARD_JOB_DELETE_FINISHED === 'true',
      serviceAccountName: env.AGENTYARD_JOB_SERVICE_ACCOUNT || undefined,
      maxConcurrentJobs: envNumber(env, 'AGENTYARD_JOB_MAX_CONCURRENT', DEFAULT_JOB_SETTINGS.maxConcurrentJobs),
      defaultCpu: env.AGENTYARD_JOB_DEFAULT_CPU || DEFAULT_JOB_SETTINGS.defaultCpu,
      defaultMemory: env.AGENTYARD_JOB_DEFAULT_MEMORY || DEFAULT_JOB_SETTINGS.defaultMemory,
      workspaceSizeLimit: env.AGENTYARD_JOB_WORKSPACE_SIZE_LIMIT || undefined,
      harness: jobHarnessSettings(env),
    },
  };
  validateElectionOptions(settings);
  return settings;
}

export interface StartOperatorOptions {
  config: Config;
  settings: OperatorSettings;
  kubeConfig: KubeConfig;
  /** An open database (tests); otherwise opened from the configuration. */
  db?: Db;
  log?: Logger;
  electionClock?: ElectionClock;
}

export interface RunningOperator {
  server: RunningServer;
  identity: string;
  isLeader(): boolean;
  /** The Factory controller of the current term (leader only). */
  factories(): FactoryResourceController | undefined;
  jobs(): JobExecutor | undefined;
  /** Resolves when the election ends: `cancelled` by stop(), or `lost` (the operator then stops itself). */
  ended: Promise<ElectionEnd>;
  stop(): Promise<void>;
}

/**
 * `agentyard operator`, after kubenode's manager: the server (ingress, API) and the replica list start first
 * and run on every replica; the leader list (the reconcile loops, the Job executor, the Factory controller:
 * `composeOperator` in src/composition.ts) starts only on the holder of the Lease, and stops before it is
 * released. Losing the lease stops everything (the pod restarts, as controller-runtime does), so no replica
 * ever reconciles without holding the lease.
 */
export async function startOperator(options: StartOperatorOptions): Promise<RunningOperator> {
  const { settings } = options;
  const log = options.log ?? createLogger(options.config.logLevel, options.config.logFormat);
  const config: Config = { ...options.config, roles: operatorServerRoles(options.config.roles) };
  const server = await startServer(config, { ...(options.db ? { db: options.db } : {}), log });
  const clients = kubeClients(options.kubeConfig);
  let stopReplica: () => Promise<void>;
  let operator: OperatorComposition;
  try {
    operator = await composeOperator(server.services, { ...settings, clients, log });
    stopReplica = await startInOrder(operator.replicaList, log);
  } catch (err) {
    await server.stop();
    throw err;
  }

  const elector = new LeaderElector(clients.coordination, {
    namespace: settings.namespace,
    leaseName: settings.leaseName,
    identity: settings.identity,
    leaseDurationMs: settings.leaseDurationMs,
    renewDeadlineMs: settings.renewDeadlineMs,
    retryPeriodMs: settings.retryPeriodMs,
    jitterFactor: settings.jitterFactor,
    log,
    ...(options.electionClock ? { clock: options.electionClock } : {}),
  });

  const lead = async (signal: AbortSignal): Promise<void> => {
    const stopLeading = await startInOrder(operator.leaderList, log);
    // Until the term ends, or every controller ended on its own (the lease is then given up).
    const aborted = new Promise((resolve) => {
      if (signal.aborted) resolve(undefined);
      signal.addEventListener('abort', resolve, { once: true });
    });
    await Promise.race([aborted, operator.leaderWorkEnded()]);
    await stopLeading();
  };

  const abort = new AbortController();
  const ended = elector.run(abort.signal, {
    onStartedLeading: lead,
    onNewLeader: (identity) => log.info({ leader: identity }, `the leader is ${identity}`),
  });
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      abort.abort();
      await ended.catch(() => 'cancelled');
      await stopReplica();
      await server.stop();
    })();
    return stopping;
  };
  void ended.then((end) => {
    if (end === 'lost') void stop();
  });
  return {
    server,
    identity: settings.identity,
    isLeader: () => elector.isLeader(),
    factories: () => (elector.isLeader() ? operator.factories() : undefined),
    jobs: () => (elector.isLeader() ? operator.jobs() : undefined),
    ended,
    stop,
  };
}
