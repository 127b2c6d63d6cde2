import type { Diagnostic } from '../definitions/diagnostic.ts';
import { ingressUrl } from '../ingress/url.ts';
import type { FactoryRow, WebhookRow } from '../factories/apply/model.ts';
import type { ConditionSet } from './conditions.ts';
import type { EventType } from './events.ts';
import type { FactoryStatus, FactoryWebhookStatus } from './factory-resource.ts';

export const READY = 'Ready';
export const APPLIED = 'Applied';
export const SOURCE_READY = 'SourceReady';
export const STALLED = 'Stalled';

function firstError(errors: readonly Diagnostic[]): Diagnostic | undefined {
  return errors.find((d) => d.severity === 'error');
}

function location(d: Diagnostic): string {
  return `${d.file}:${d.line}:${d.column}`;
}

/**
 * Sets SourceReady, Applied and Ready from the factory row (what the reconciler recorded), with messages
 * in the "what failed: cause" form. A refused revision leaves Ready False with a message that names the
 * first error's file and line and the revision still serving.
 */
export function setFactoryConditions(conditions: ConditionSet, row: FactoryRow, options: { suspended: boolean }): void {
  const source = row.source_error;
  if (source) conditions.set(SOURCE_READY, 'False', source.reason, source.message);
  else if (row.fetched_at)
    conditions.set(
      SOURCE_READY,
      'True',
      'Succeeded',
      row.attempted_revision ? `Fetched revision: ${row.attempted_revision}` : 'Fetched the source',
    );
  else conditions.set(SOURCE_READY, 'Unknown', 'Progressing', 'Waiting for the first fetch of the source');

  const first = firstError(row.errors);
  if (row.state === 'applied') {
    conditions.set(APPLIED, 'True', 'Applied', row.message ?? `Applied revision: ${row.applied_revision}`);
  } else if (row.state === 'failed') {
    let message = row.message ?? `revision ${row.attempted_revision} was refused`;
    if (first && !message.includes(location(first))) message += `; first error: ${location(first)} ${first.message}`;
    conditions.set(APPLIED, 'False', row.reason ?? 'ApplyFailed', message);
  } else {
    conditions.set(APPLIED, 'Unknown', 'Progressing', 'No revision has been applied yet');
  }

  conditions.delete(STALLED);
  const applied = conditions.get(APPLIED)!;
  const sourceReady = conditions.get(SOURCE_READY)!;
  const serving = row.applied_revision ? `; still serving ${row.applied_revision}` : '';
  if (applied.status === 'False') {
    conditions.set(READY, 'False', applied.reason, applied.message + serving);
  } else if (sourceReady.status === 'False') {
    conditions.set(READY, 'False', sourceReady.reason, sourceReady.message + serving);
  } else if (applied.status === 'True') {
    conditions.set(
      READY,
      'True',
      options.suspended ? 'Suspended' : 'Succeeded',
      options.suspended ? `${applied.message} (reconciliation suspended)` : applied.message,
    );
  } else {
    conditions.set(
      READY,
      'Unknown',
      'Progressing',
      options.suspended ? 'Reconciliation is suspended' : 'Reconciliation in progress',
    );
  }
}

export function webhookStatus(rows: readonly WebhookRow[], baseUrl: string): FactoryWebhookStatus[] {
  return rows
    .filter((w) => w.deleted_at === null)
    .map((w) => ({ name: w.name, uid: w.uid, ingressUrl: ingressUrl(baseUrl, w), enabled: w.enabled }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export interface PlannedEvent {
  type: EventType;
  reason: string;
  message: string;
}

const MISSING_SECRET = /^no managed secret named `([^`]+)`/;

/**
 * The Events a status change deserves (on transitions only, never for a no-op): an apply, a refusal, a
 * source failure and recovery, and one SecretNotFound per missing Secret a refused revision names.
 */
export function statusEvents(
  previous: FactoryStatus | undefined,
  next: FactoryStatus,
  namespace: string,
): PlannedEvent[] {
  const events: PlannedEvent[] = [];
  const cond = (s: FactoryStatus | undefined, type: string) => s?.conditions?.find((c) => c.type === type);
  const applied = cond(next, APPLIED);
  const before = cond(previous, APPLIED);
  if (next.appliedRevision && next.appliedRevision !== previous?.appliedRevision) {
    events.push({
      type: 'Normal',
      reason: 'Applied',
      message: applied?.status === 'True' ? applied.message : `Applied revision: ${next.appliedRevision}`,
    });
  } else if (applied?.status === 'True' && before?.status === 'False') {
    events.push({ type: 'Normal', reason: 'Applied', message: applied.message });
  }
  if (applied?.status === 'False' && (before?.status !== 'False' || before.message !== applied.message)) {
    events.push({ type: 'Warning', reason: applied.reason, message: applied.message });
    for (const error of next.errors ?? []) {
      const missing = error.severity === 'error' ? MISSING_SECRET.exec(error.message) : null;
      if (!missing) continue;
      const [name, key = 'value'] = missing[1]!.split('/');
      events.push({
        type: 'Warning',
        reason: 'SecretNotFound',
        message: `Secret ${namespace}/${name} with key "${key}" does not exist (${error.file}:${error.line}:${error.column}); create it, then push a commit or annotate the Factory with agentyard.dev/reconcile-requested-at`,
      });
    }
  }
  const source = cond(next, SOURCE_READY);
  const sourceBefore = cond(previous, SOURCE_READY);
  if (source?.status === 'False' && (sourceBefore?.status !== 'False' || sourceBefore.message !== source.message)) {
    events.push({ type: 'Warning', reason: source.reason, message: source.message });
  } else if (source?.status === 'True' && sourceBefore?.status === 'False') {
    events.push({ type: 'Normal', reason: 'SourceRecovered', message: source.message });
  }
  return events;
}

/** Compares two statuses as the API server would store them (key order and undefined members aside). */
export function sameStatus(a: FactoryStatus | undefined, b: FactoryStatus): boolean {
  return canonical(a ?? {}) === canonical(b);
}

function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      return Object.fromEntries(
        Object.entries(v as Record<string, unknown>)
          .filter(([, x]) => x !== undefined)
          .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)),
      );
    }
    return v;
  });
}
