import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Diagnostic } from '../definitions/diagnostic.ts';
import { factoryJsonSchema } from './crd.ts';
import type { Condition } from './conditions.ts';

export type Executor = 'kubernetes' | 'service';

export interface FactorySpec {
  source: {
    git: {
      url: string;
      branch?: string;
      path?: string;
      pollInterval?: string;
      credentialsSecretRef?: { name: string };
    };
  };
  suspend?: boolean;
  executor?: Executor;
  ingress?: { baseUrl?: string };
}

export interface FactoryWebhookStatus {
  name: string;
  uid: string;
  ingressUrl: string;
  enabled: boolean;
}

export interface FactoryStatus {
  observedGeneration?: number;
  factoryId?: string;
  appliedRevision?: string;
  attemptedRevision?: string;
  lastAppliedAt?: string;
  lastHandledReconcileAt?: string;
  conditions?: Condition[];
  errors?: Diagnostic[];
  webhooks?: FactoryWebhookStatus[];
  webhookCount?: number;
}

/** A `Factory` custom resource as read from the API server. */
export interface FactoryResource extends KubernetesObject {
  spec: FactorySpec;
  status?: FactoryStatus;
}

let validator: ValidateFunction | undefined;

function compile(): ValidateFunction {
  if (validator) return validator;
  const ajv = new Ajv2020({ strict: false, allErrors: true, useDefaults: true });
  addFormats.default(ajv);
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isSafeInteger(n) });
  const schema = factoryJsonSchema();
  const { spec } = schema.properties as { spec: Record<string, unknown> };
  validator = ajv.compile({ ...spec, $defs: schema.$defs });
  return validator;
}

function describeError(e: ErrorObject): string {
  const at = `spec${e.instancePath.replaceAll('/', '.')}`;
  if (e.keyword === 'required') return `${at}.${(e.params as { missingProperty: string }).missingProperty} is required`;
  if (e.keyword === 'additionalProperties')
    return `${at}.${(e.params as { additionalProperty: string }).additionalProperty} is not a known field`;
  if (e.keyword === 'enum')
    return `${at} must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`;
  return `${at} ${e.message ?? 'is invalid'}`;
}

/**
 * Checks a Factory's spec against the same JSON Schema the CRD is generated from, and fills in defaults.
 * The API server already enforces the CRD schema; this guards against objects stored under an older CRD.
 */
export function validateFactorySpec(
  spec: unknown,
): { spec: Required<Pick<FactorySpec, 'suspend' | 'executor'>> & FactorySpec } | { error: string } {
  const copy = structuredClone(spec ?? {});
  const validate = compile();
  if (!validate(copy)) return { error: (validate.errors ?? []).map(describeError).join('; ') };
  const checked = copy as FactorySpec;
  const seconds = parseDuration(checked.source.git.pollInterval ?? '1m');
  if (seconds > MAX_POLL_SECONDS) return { error: `spec.source.git.pollInterval must be at most 24h` };
  return { spec: { ...checked, suspend: checked.suspend ?? false, executor: checked.executor ?? 'kubernetes' } };
}

const MAX_POLL_SECONDS = 86_400;
const UNIT_SECONDS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600 };

/** A Go duration (`90s`, `1m30s`, `1.5h`, `0`) in whole seconds, rounded up (a non-zero duration is at least 1 s). */
export function parseDuration(text: string): number {
  if (text === '0') return 0;
  const parts = [...text.matchAll(/([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)/g)];
  if (!parts.length || parts.map((p) => p[0]).join('') !== text)
    throw new Error(`"${text}" is not a duration (like 30s, 5m, 1h)`);
  const total = parts.reduce((sum, p) => sum + Number(p[1]) * UNIT_SECONDS[p[2]!]!, 0);
  return total === 0 ? 0 : Math.max(1, Math.ceil(total));
}

/** The namespace/name key of an object, as the work queue and caches use it. */
export function objectKey(obj: KubernetesObject): string {
  return `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
}

export function splitKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf('/');
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
