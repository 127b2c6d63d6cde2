import type { V1Job, V1Secret, V1OwnerReference, V1EnvVar, V1KeyToPath } from '@kubernetes/client-node';
import type { RunnerDefinition } from '../definitions/model.ts';
import type { RunRow } from '../runs/model.ts';
import type { HarnessSettings, JobInvocation } from './harness.ts';
import { API_VERSION, FACTORY_KIND } from './crd.ts';

export const RUN_ID_LABEL = 'agentyard.dev/run-id';
/** Label of the Jobs (and their Secrets) of a Factory's runs. */
export const FACTORY_UID_LABEL = 'agentyard.dev/factory-uid';
export const MANAGED_BY = {
  'app.kubernetes.io/managed-by': 'agentyard',
  'app.kubernetes.io/part-of': 'agentyard',
} as const;
/** Where the run's files (prompt, run.json, event-payload.json, attachments) are mounted, read-only. */
export const RUN_DIR = '/agentyard/run';
/** Where managed secret values are mounted as files (also set as environment variables when the name allows). */
export const SECRETS_DIR = '/agentyard/secrets';
export const WORKSPACE_DIR = '/workspace';
/** The largest per-run Secret the executor writes (the API server's limit is 1 MiB). */
export const MAX_RUN_SECRET_BYTES = 900 * 1024;

export interface JobSettings {
  /** Image when the agent's runner names none. */
  defaultImage: string;
  /** CPU and memory when the runner declares no instanceShape. */
  defaultCpu: string;
  defaultMemory: string;
  /** Finished Jobs (and their Secrets) are deleted by Kubernetes this long after they end; 0 = at once. */
  ttlSecondsAfterFinished: number;
  /** A run's Job is stopped after this long and the run ends ERROR (timed out); 0 = no limit. */
  activeDeadlineSeconds: number;
  /** Delete a Job as soon as its outcome moved the run to a final state (otherwise the TTL does it). */
  deleteFinishedJobs: boolean;
  serviceAccountName: string | undefined;
  /** Runs executing at once across the cluster; more wait QUEUED. */
  maxConcurrentJobs: number;
  /** Size limit of the workspace emptyDir; undefined = none. */
  workspaceSizeLimit: string | undefined;
  /** Which harness runs a run, and the CLI executables inside runner images. */
  harness: HarnessSettings;
}

export const DEFAULT_JOB_SETTINGS: JobSettings = {
  defaultImage: 'ghcr.io/agentyard/agent-runner:latest',
  defaultCpu: '1',
  defaultMemory: '2Gi',
  ttlSecondsAfterFinished: 3600,
  activeDeadlineSeconds: 4 * 3600,
  deleteFinishedJobs: false,
  serviceAccountName: undefined,
  maxConcurrentJobs: 20,
  workspaceSizeLimit: undefined,
  harness: {
    defaultHarness: 'claude',
    bins: { claude: 'claude', codex: 'codex', gemini: 'gemini', command: '', agentyard: 'node' },
    commandArgs: [],
  },
};

export interface JobInput {
  run: RunRow;
  /** The Job's name (from its execution ID: each execution of a run is its own Job). */
  jobName: string;
  namespace: string;
  factory: { name: string; uid: string };
  runner: RunnerDefinition | undefined;
  invocation: JobInvocation;
  /** Values of the managed secrets the agent declares (`secrets` of the agent or the factory), by name. */
  secrets: Map<string, string>;
  settings: JobSettings;
}

/** `agentyard-exe-<ulid>`: a DNS label (63 characters at most), one per execution of a run. */
export function jobNameFor(executionId: string): string {
  return `agentyard-${executionId.toLowerCase().replace(/[^a-z0-9-]+/g, '-')}`.slice(0, 63).replace(/-+$/, '');
}

export const EXECUTION_ID_LABEL = 'agentyard.dev/execution-id';

export function labelsFor(
  run: RunRow,
  factory: { name: string; uid: string },
  executionId: string,
): Record<string, string> {
  return {
    ...MANAGED_BY,
    'app.kubernetes.io/component': 'agent-run',
    [RUN_ID_LABEL]: run.id,
    [EXECUTION_ID_LABEL]: executionId,
    [FACTORY_UID_LABEL]: factory.uid,
    'agentyard.dev/factory': factory.name.slice(0, 63),
  };
}

export function factoryOwner(factory: { name: string; uid: string }): V1OwnerReference {
  return {
    apiVersion: API_VERSION,
    kind: FACTORY_KIND,
    name: factory.name,
    uid: factory.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** CPU and memory requests and limits from the runner's instanceShape (vCPUs and GiB). */
export function resourcesFor(
  runner: RunnerDefinition | undefined,
  settings: JobSettings,
): { cpu: string; memory: string } {
  const shape = runner?.instanceShape;
  return shape
    ? { cpu: String(shape.vcpus), memory: `${shape.memoryGb}Gi` }
    : { cpu: settings.defaultCpu, memory: settings.defaultMemory };
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const RESERVED_ENV = /^AGENTYARD_/;

/** Data keys of the per-run Secret (keys allow only `[-._a-zA-Z0-9]`). */
const KEY = {
  prompt: 'prompt.txt',
  run: 'run.json',
  stdin: 'stdin',
  file: (i: number) => `ws.${i}`,
  env: (name: string) => `env.${name}`,
  secret: (name: string) => `secret.${name}`,
};

/**
 * The per-run Secret: the prompt, run.json, the agent's stdin, the workspace files the harness prepared
 * (attachments such as `event-payload.json`, skills, the CLI's configuration), the provider key and the
 * values of the agent's managed secrets. Owned by the Job, so it goes when the Job goes.
 */
export function buildRunSecret(input: JobInput, job: { name: string; uid: string }): V1Secret {
  const { run, invocation } = input;
  const data: Record<string, string> = {};
  const put = (key: string, value: Buffer | string): void => {
    data[key] = Buffer.from(value).toString('base64');
  };
  put(KEY.prompt, run.prompt);
  put(
    KEY.run,
    JSON.stringify(
      {
        run_id: run.id,
        execution_id: invocation.executionId,
        harness: invocation.harness,
        title: run.title,
        session_id: run.session_id,
        source: run.source,
        factory_id: run.factory_id,
        config: run.config,
      },
      null,
      2,
    ),
  );
  if (invocation.stdin !== undefined) put(KEY.stdin, invocation.stdin);
  invocation.files.forEach((f, i) => put(KEY.file(i), f.content));
  for (const [name, value] of Object.entries(invocation.secretEnv)) put(KEY.env(name), value);
  for (const [name, value] of input.secrets) put(KEY.secret(name), value);
  const size = Object.values(data).reduce((n, v) => n + v.length, 0);
  if (size > MAX_RUN_SECRET_BYTES) {
    throw new RunSecretTooLarge(
      `the run's files and secrets take ${Math.ceil(size / 1024)} KiB encoded; a Kubernetes Secret holds at most ${MAX_RUN_SECRET_BYTES / 1024} KiB`,
    );
  }
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: job.name,
      namespace: input.namespace,
      labels: labelsFor(run, input.factory, invocation.executionId),
      ownerReferences: [
        {
          apiVersion: 'batch/v1',
          kind: 'Job',
          name: job.name,
          uid: job.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    type: 'Opaque',
    immutable: true,
    data,
  };
}

export class RunSecretTooLarge extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RunSecretTooLarge';
  }
}

/** Where the prepared workspace files are mounted for the init container to copy. */
const PREPARED_DIR = '/agentyard/prepared';
/** Copies the prepared files (dereferencing the Secret volume's links, skipping its `..data` bookkeeping). */
const COPY_PREPARED = `set -e
cd ${PREPARED_DIR}
find -L . -type f ! -path './..*' | while IFS= read -r f; do
  mkdir -p "${WORKSPACE_DIR}/$(dirname "$f")"
  cp -L "$f" "${WORKSPACE_DIR}/$f"
done`;

/**
 * A batch/v1 Job for one run: the runner's image, CPU and memory; an init container that puts the prepared
 * workspace files into the workspace emptyDir; then the runner's setup commands and the harness command
 * (stdin from the run's files). It is created suspended (the Secret it mounts is created next, owned by it)
 * and never retried: a failed pod fails the run. An evicted or preempted pod fails the Job at once (pod
 * failure policy), so the run ends ERROR saying so.
 */
export function buildJob(input: JobInput): V1Job {
  const { run, settings, runner, invocation } = input;
  const name = input.jobName;
  const labels = labelsFor(run, input.factory, invocation.executionId);
  const { cpu, memory } = resourcesFor(runner, settings);
  const image = runner?.platform.dockerImage ?? settings.defaultImage;
  const setup = runner?.setupCommands ?? [];
  const redirect = invocation.stdin !== undefined ? ` < ${RUN_DIR}/${KEY.stdin}` : ' < /dev/null';
  const script = [...(setup.length ? ['set -e', ...setup, 'set +e'] : []), `exec "$@"${redirect}`].join('\n');
  const command = ['/bin/sh', '-c', script, 'agentyard-run', ...invocation.command];

  const runItems: V1KeyToPath[] = [
    { key: KEY.prompt, path: KEY.prompt },
    { key: KEY.run, path: KEY.run },
    ...(invocation.stdin !== undefined ? [{ key: KEY.stdin, path: KEY.stdin }] : []),
  ];
  const secretNames = [...input.secrets.keys()];
  const fromSecret = (envName: string, key: string): V1EnvVar => ({
    name: envName,
    valueFrom: { secretKeyRef: { name, key } },
  });
  const env: V1EnvVar[] = [
    { name: 'AGENTYARD_RUN_ID', value: run.id },
    { name: 'AGENTYARD_RUN_DIR', value: RUN_DIR },
    { name: 'AGENTYARD_PROMPT_FILE', value: `${RUN_DIR}/${KEY.prompt}` },
    ...(secretNames.length ? [{ name: 'AGENTYARD_SECRETS_DIR', value: SECRETS_DIR }] : []),
    ...(invocation.files.some((f) => f.path === 'event-payload.json')
      ? [{ name: 'AGENTYARD_EVENT_PAYLOAD', value: `${WORKSPACE_DIR}/event-payload.json` }]
      : []),
    ...Object.entries(invocation.env).map(([k, v]) => ({ name: k, value: v })),
    ...Object.keys(invocation.secretEnv).map((k) => fromSecret(k, KEY.env(k))),
    ...secretNames
      .filter((n) => ENV_NAME.test(n) && !RESERVED_ENV.test(n) && !(n in invocation.secretEnv))
      .map((n) => fromSecret(n, KEY.secret(n))),
  ];
  const containerSecurity = { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } };
  const resources = { requests: { cpu, memory }, limits: { cpu, memory } };

  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name,
      namespace: input.namespace,
      labels,
      annotations: { 'agentyard.dev/run-title': run.title.slice(0, 256), 'agentyard.dev/harness': invocation.harness },
      ownerReferences: [factoryOwner(input.factory)],
    },
    spec: {
      suspend: true,
      backoffLimit: 0,
      ...(settings.activeDeadlineSeconds > 0 ? { activeDeadlineSeconds: settings.activeDeadlineSeconds } : {}),
      ttlSecondsAfterFinished: settings.ttlSecondsAfterFinished,
      podFailurePolicy: {
        rules: [{ action: 'FailJob', onPodConditions: [{ type: 'DisruptionTarget', status: 'True' }] }],
      },
      template: {
        metadata: { labels },
        spec: {
          restartPolicy: 'Never',
          ...(settings.serviceAccountName ? { serviceAccountName: settings.serviceAccountName } : {}),
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
          initContainers:
            invocation.files.length === 0
              ? []
              : [
                  {
                    name: 'workspace',
                    image,
                    command: ['/bin/sh', '-c', COPY_PREPARED],
                    securityContext: containerSecurity,
                    resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { cpu, memory } },
                    volumeMounts: [
                      { name: 'workspace', mountPath: WORKSPACE_DIR },
                      { name: 'prepared', mountPath: PREPARED_DIR, readOnly: true },
                    ],
                  },
                ],
          containers: [
            {
              name: 'agent',
              image,
              command,
              workingDir: WORKSPACE_DIR,
              env,
              resources,
              securityContext: containerSecurity,
              volumeMounts: [
                { name: 'workspace', mountPath: WORKSPACE_DIR },
                { name: 'run', mountPath: RUN_DIR, readOnly: true },
                ...(secretNames.length ? [{ name: 'secrets', mountPath: SECRETS_DIR, readOnly: true }] : []),
              ],
            },
          ],
          volumes: [
            {
              name: 'workspace',
              emptyDir: settings.workspaceSizeLimit ? { sizeLimit: settings.workspaceSizeLimit } : {},
            },
            { name: 'run', secret: { secretName: name, items: runItems, defaultMode: 0o444 } },
            // An empty items list would project every key, secrets included: no files, no volume.
            ...(invocation.files.length
              ? [
                  {
                    name: 'prepared',
                    secret: {
                      secretName: name,
                      items: invocation.files.map((f, i) => ({ key: KEY.file(i), path: f.path })),
                      defaultMode: 0o444,
                    },
                  },
                ]
              : []),
            ...(secretNames.length
              ? [
                  {
                    name: 'secrets',
                    secret: {
                      secretName: name,
                      items: secretNames.map((n) => ({ key: KEY.secret(n), path: n })),
                      defaultMode: 0o400,
                    },
                  },
                ]
              : []),
          ],
        },
      },
    },
  };
}

/** How a finished Job ended, for the run: `succeed`, or `fail`/`error` with a message that says why. */
export type JobOutcome =
  | { kind: 'running'; started: boolean }
  | { kind: 'succeeded' }
  | { kind: 'failed'; event: 'fail' | 'error'; message: string; code: string };

/** Reads a Job's status the way the run state machine needs it. */
export function jobOutcome(job: V1Job): JobOutcome {
  const conditions = job.status?.conditions ?? [];
  const isTrue = (type: string) => conditions.find((c) => c.type === type && c.status === 'True');
  if (isTrue('Complete') || isTrue('SuccessCriteriaMet')) return { kind: 'succeeded' };
  const failed = isTrue('Failed') ?? isTrue('FailureTarget');
  if (failed) {
    const reason = failed.reason ?? '';
    const detail = failed.message ? `: ${failed.message}` : '';
    if (reason === 'DeadlineExceeded') {
      const limit = job.spec?.activeDeadlineSeconds;
      return {
        kind: 'failed',
        event: 'error',
        code: 'run_timed_out',
        message: `the run's Job timed out${limit ? ` after ${limit} s (activeDeadlineSeconds)` : ''}${detail}`,
      };
    }
    if (reason === 'PodFailurePolicy' && /DisruptionTarget/.test(failed.message ?? '')) {
      return {
        kind: 'failed',
        event: 'error',
        code: 'run_evicted',
        message: `the run's pod was evicted or preempted by Kubernetes${detail}`,
      };
    }
    if (reason === 'BackoffLimitExceeded') {
      return {
        kind: 'failed',
        event: 'fail',
        code: 'agent_failed',
        message: `the agent exited with an error${detail}`,
      };
    }
    return {
      kind: 'failed',
      event: 'error',
      code: 'job_failed',
      message: `the run's Job failed (${reason || 'no reason given'})${detail}`,
    };
  }
  const started = (job.status?.active ?? 0) > 0 || (job.status?.ready ?? 0) > 0 || job.status?.startTime !== undefined;
  return { kind: 'running', started: started && job.spec?.suspend !== true };
}
