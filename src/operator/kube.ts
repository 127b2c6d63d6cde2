import { readFileSync } from 'node:fs';
import {
  ApiException,
  BatchV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  NetworkingV1Api,
  KubeConfig,
  Observable,
  PatchStrategy,
} from '@kubernetes/client-node';
import type { ConfigurationOptions, RequestContext, ResponseContext } from '@kubernetes/client-node';

const SERVICE_ACCOUNT_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** The API clients the operator uses, all from one KubeConfig. */
export interface KubeClients {
  config: KubeConfig;
  core: CoreV1Api;
  batch: BatchV1Api;
  coordination: CoordinationV1Api;
  custom: CustomObjectsApi;
  networking: NetworkingV1Api;
}

/** `KUBECONFIG` (or ~/.kube/config) when present, else the in-cluster service account. */
export function loadKubeConfig(env: NodeJS.ProcessEnv = process.env): KubeConfig {
  const config = new KubeConfig();
  if (env.KUBECONFIG) config.loadFromDefault();
  else if (env.KUBERNETES_SERVICE_HOST) config.loadFromCluster();
  else config.loadFromDefault();
  if (!config.getCurrentCluster())
    throw new Error('no Kubernetes cluster configured: set KUBECONFIG or run in a pod with a service account');
  return config;
}

export function kubeClients(config: KubeConfig): KubeClients {
  return {
    config,
    core: config.makeApiClient(CoreV1Api),
    batch: config.makeApiClient(BatchV1Api),
    coordination: config.makeApiClient(CoordinationV1Api),
    custom: config.makeApiClient(CustomObjectsApi),
    networking: config.makeApiClient(NetworkingV1Api),
  };
}

/** `AGENTYARD_NAMESPACE`, else the pod's namespace from its service account, else `default`. */
export function operatorNamespace(
  env: NodeJS.ProcessEnv = process.env,
  namespaceFile = SERVICE_ACCOUNT_NAMESPACE_FILE,
): string {
  if (env.AGENTYARD_NAMESPACE) return env.AGENTYARD_NAMESPACE;
  try {
    const fromFile = readFileSync(namespaceFile, 'utf8').trim();
    if (fromFile) return fromFile;
  } catch {
    // not in a pod
  }
  return 'default';
}

/**
 * Per-request options for the generated clients: a patch content type and an AbortSignal (the clients'
 * middleware expects their own Observable type).
 */
export function requestOptions(options: {
  patch?: 'merge' | 'json' | 'strategic';
  signal?: AbortSignal | undefined;
}): ConfigurationOptions {
  const contentType =
    options.patch === 'merge'
      ? PatchStrategy.MergePatch
      : options.patch === 'json'
        ? PatchStrategy.JsonPatch
        : options.patch === 'strategic'
          ? PatchStrategy.StrategicMergePatch
          : undefined;
  return {
    middleware: [
      {
        pre: (context: RequestContext) => {
          if (contentType) context.setHeaderParam('Content-Type', contentType);
          if (options.signal) context.setSignal(options.signal);
          return new Observable(Promise.resolve(context));
        },
        post: (response: ResponseContext) => new Observable(Promise.resolve(response)),
      },
    ],
    middlewareMergeStrategy: 'append',
  };
}

/** The HTTP status of a failed API call (ApiException or a watch error), if it has one. */
export function statusCode(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code;
  const e = err as { statusCode?: unknown; code?: unknown } | null;
  if (typeof e?.statusCode === 'number') return e.statusCode;
  if (typeof e?.code === 'number') return e.code;
  return undefined;
}

export const isNotFound = (err: unknown): boolean => statusCode(err) === 404;
export const isConflict = (err: unknown): boolean => statusCode(err) === 409;

/** The API server's message of a failed call (the Status object's `message`), else the error's. */
export function apiMessage(err: unknown): string {
  if (err instanceof ApiException) {
    try {
      const body = (typeof err.body === 'string' ? JSON.parse(err.body) : err.body) as { message?: string };
      if (body?.message) return body.message;
    } catch {
      // not a Status
    }
    return `HTTP ${err.code}`;
  }
  return err instanceof Error ? err.message : String(err);
}
