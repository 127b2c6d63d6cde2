import { isDeepStrictEqual } from 'node:util';
import type { FactoryFileInput } from '../../definitions/load.ts';
import type { AutomationDefinition, FactoryDefinition, Trigger, WebhookDefinition } from '../../definitions/model.ts';
import type { AutomationRow, Change, ChangeKind, PlanWarning, WebhookRow } from './model.ts';
import type { AutomationValues, WebhookTriggerRow, WebhookValues } from './sql.ts';
import { runConfigFor, storedTrigger } from './run-config.ts';

export type WebhookOp =
  | { op: 'create'; uid: string | null; values: WebhookValues; secret: string }
  | {
      op: 'update';
      uid: string;
      values: WebhookValues;
      fields: string[] /** null: keep the value in force */;
      secret: string | null;
    }
  | { op: 'delete'; uid: string; name: string; file: string };

export type AutomationOp =
  | { op: 'create'; id: string | null; values: AutomationValues; triggers: WebhookTriggerRow[] }
  | { op: 'update'; id: string; values: AutomationValues; triggers: WebhookTriggerRow[]; fields: string[] }
  | { op: 'delete'; id: string; name: string; file: string };

export interface Plan {
  webhooks: WebhookOp[];
  automations: AutomationOp[];
  changes: Change[];
  warnings: PlanWarning[];
  /** Webhook or automation rows change (the ingress must reload). */
  liveChanged: boolean;
  /** The apply would delete every live webhook and automation (and there was at least one). */
  deletesEverything: boolean;
}

export interface PlanInput {
  definition: FactoryDefinition;
  files: readonly FactoryFileInput[];
  /** The factory's webhooks, deleted ones included. */
  webhooks: readonly WebhookRow[];
  automations: readonly AutomationRow[];
  /** The definition of the applied revision. */
  applied: FactoryDefinition | null;
  /** Secret values as the provider has them now, by secret name. */
  secrets: ReadonlyMap<string, string>;
  /** Read the managed secrets into webhooks (a new revision) or keep the values in force (spec rule 5). */
  refreshSecrets: boolean;
  decrypt(sealed: Uint8Array): string;
  /** New webhook UIDs and automation IDs; absent for a dry run (`plan`), which shows null. */
  newUid?: () => string;
  newAutomationId?: () => string;
}

function webhookValues(def: WebhookDefinition): WebhookValues {
  return {
    name: def.name,
    file: def.file,
    authMode: def.authMode,
    signatureScheme: def.signatureScheme,
    secretName: def.secretName,
    deliveryIdHeader: def.deliveryIdHeader,
    enabled: def.enabled,
  };
}

function liveWebhookValues(row: WebhookRow): WebhookValues {
  return {
    name: row.name,
    file: row.file,
    authMode: row.auth_mode,
    signatureScheme: row.signature_scheme,
    secretName: row.secret_name ?? '',
    deliveryIdHeader: row.delivery_id_header,
    enabled: row.enabled,
  };
}

const WEBHOOK_FIELD_NAMES: Record<keyof WebhookValues, string> = {
  name: 'name',
  file: 'file',
  authMode: 'authMode',
  signatureScheme: 'signatureScheme',
  secretName: 'secretName',
  deliveryIdHeader: 'deliveryIdHeader',
  enabled: 'enabled',
};

/**
 * Webhook file name → the UID its webhook has after this apply: kept webhooks keep theirs, created ones get
 * a new one (null in a dry run, before it exists).
 */
export type WebhookUidsByName = ReadonlyMap<string, string | null>;

/**
 * A definition's automation as rows. Webhook triggers that name a webhook file are stored with the UID it
 * resolves to, so live rows hold UIDs whichever form the file used; `webhookUids` holds every name the
 * definition's webhooks have (validation refused any other name).
 */
export function automationValues(
  def: AutomationDefinition,
  webhookUids: WebhookUidsByName = new Map(),
): {
  values: AutomationValues;
  triggers: WebhookTriggerRow[];
} {
  const resolved = def.triggers.map((t): Trigger => {
    if (t.kind !== 'webhook' || t.webhookName === null) return t;
    const uid = webhookUids.get(t.webhookName);
    return uid ? { ...t, webhookUid: uid, webhookName: null } : t;
  });
  const triggers: WebhookTriggerRow[] = [];
  resolved.forEach((t, i) => {
    // A name still unresolved is a webhook a dry run would create: there is no row to write for it.
    if (t.kind === 'webhook' && t.webhookUid !== null)
      triggers.push({ webhookUid: t.webhookUid, triggerIndex: i, payloadFilter: t.payload });
  });
  return {
    values: {
      name: def.name,
      file: def.file,
      enabled: def.enabled,
      prompt: def.prompt,
      agent: def.agent,
      config: runConfigFor(def.execution, def.name),
      triggers: resolved.map(storedTrigger),
    },
    triggers,
  };
}

function differingFields<T extends object>(a: T, b: T, keys: readonly (keyof T)[]): string[] {
  // JSON round trip: jsonb columns come back without undefined members and with normalised key order.
  const norm = (v: unknown): unknown => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));
  return keys.filter((k) => !isDeepStrictEqual(norm(a[k]), norm(b[k]))).map(String);
}

function lineOf(files: readonly FactoryFileInput[], file: string, needle: string): number {
  const content = files.find((f) => f.path === file)?.content ?? '';
  const index = content.indexOf(needle);
  return index < 0 ? 1 : content.slice(0, index).split('\n').length;
}

/** Summaries for the parts of a definition that have no live rows (agents, runners...): informative only. */
function definitionChanges(applied: FactoryDefinition | null, next: FactoryDefinition): Change[] {
  const changes: Change[] = [];
  const diff = <T extends { file: string }>(
    kind: ChangeKind,
    before: readonly T[],
    after: readonly T[],
    key: (t: T) => string,
  ): void => {
    const old = new Map(before.map((t) => [key(t), t]));
    for (const item of after) {
      const prev = old.get(key(item));
      old.delete(key(item));
      if (!prev) changes.push({ kind, name: key(item), file: item.file, action: 'created' });
      else if (!isDeepStrictEqual(JSON.parse(JSON.stringify(prev)), JSON.parse(JSON.stringify(item)))) {
        changes.push({ kind, name: key(item), file: item.file, action: 'updated' });
      }
    }
    for (const [name, item] of old) changes.push({ kind, name, file: item.file, action: 'deleted' });
  };
  if (!applied) changes.push({ kind: 'factory', name: next.factory.name, file: next.factory.file, action: 'created' });
  else if (!isDeepStrictEqual(JSON.parse(JSON.stringify(applied.factory)), JSON.parse(JSON.stringify(next.factory)))) {
    changes.push({ kind: 'factory', name: next.factory.name, file: next.factory.file, action: 'updated' });
  }
  diff('agent', applied?.agents ?? [], next.agents, (a) => a.name);
  diff('runner', applied?.runners ?? [], next.runners, (r) => r.name);
  diff('scorer', applied?.scorers ?? [], next.scorers, (s) => s.name);
  diff(
    'skill',
    (applied?.skills ?? []).map((s) => ({ ...s, file: s.path })),
    next.skills.map((s) => ({ ...s, file: s.path })),
    (s) => s.path,
  );
  diff('benchmark', applied?.benchmarks ?? [], next.benchmarks, (b) => b.slug);
  return changes;
}

/**
 * Diffs the desired state of a valid revision against the live rows: webhooks by file name (a kept file
 * keeps its UID), automations by name. Pure: it reads nothing and writes nothing.
 */
export function computePlan(input: PlanInput): Plan {
  const { definition } = input;
  const webhooks: WebhookOp[] = [];
  const automations: AutomationOp[] = [];
  const changes: Change[] = [];
  const warnings: PlanWarning[] = [];

  const live = new Map(input.webhooks.filter((w) => w.deleted_at === null).map((w) => [w.name, w]));
  const desired = new Map(definition.webhooks.map((w) => [w.name, w]));

  for (const def of definition.webhooks) {
    const values = webhookValues(def);
    const row = live.get(def.name);
    const provided = input.secrets.get(def.secretName);
    if (!row) {
      if (provided === undefined) throw new Error(`secret ${def.secretName} of ${def.file} has no value`);
      webhooks.push({ op: 'create', uid: input.newUid?.() ?? null, values, secret: provided });
      continue;
    }
    const fields = differingFields(
      liveWebhookValues(row),
      values,
      Object.keys(WEBHOOK_FIELD_NAMES) as (keyof WebhookValues)[],
    );
    let secret: string | null = null;
    const inForce = row.secret_ciphertext ? input.decrypt(row.secret_ciphertext) : undefined;
    if (
      (input.refreshSecrets || inForce === undefined || fields.includes('secretName')) &&
      provided !== undefined &&
      provided !== inForce
    ) {
      secret = provided;
      fields.push('secret');
    }
    if (fields.length > 0) webhooks.push({ op: 'update', uid: row.uid, values, fields, secret });
  }
  for (const row of live.values()) {
    if (!desired.has(row.name)) webhooks.push({ op: 'delete', uid: row.uid, name: row.name, file: row.file });
  }

  // A deleted file and a created file with the same settings in one revision: most likely a rename.
  const created = webhooks.filter((w): w is Extract<WebhookOp, { op: 'create' }> => w.op === 'create');
  const renamedFrom = new Map<string, Extract<WebhookOp, { op: 'delete' }>>();
  for (const del of webhooks.filter((w): w is Extract<WebhookOp, { op: 'delete' }> => w.op === 'delete')) {
    const old = live.get(del.name)!;
    const match = created.find((c) => {
      if ([...renamedFrom.keys()].includes(c.values.name)) return false;
      return isDeepStrictEqual({ ...liveWebhookValues(old), name: '', file: '' }, { ...c.values, name: '', file: '' });
    });
    if (match) renamedFrom.set(match.values.name, del);
  }

  for (const op of webhooks) {
    if (op.op === 'create') {
      const from = renamedFrom.get(op.values.name);
      changes.push({
        kind: 'webhook',
        name: op.values.name,
        file: op.values.file,
        action: 'created',
        uid: op.uid,
        ...(from ? { detail: `renamed from ${from.file}: a new webhook with a new UID` } : {}),
      });
      if (from) {
        warnings.push({
          code: 'webhook_renamed',
          file: op.values.file,
          line: 1,
          path: '',
          message: `${from.file} → ${op.values.file} is a delete plus a create: the webhook gets a new UID and ingress URL, ${from.uid} answers 404, and senders must be given the new URL`,
        });
      }
    } else if (op.op === 'update') {
      changes.push({
        kind: 'webhook',
        name: op.values.name,
        file: op.values.file,
        action: 'updated',
        uid: op.uid,
        fields: op.fields,
      });
    } else {
      changes.push({ kind: 'webhook', name: op.name, file: op.file, action: 'deleted', uid: op.uid });
    }
  }

  // Triggers that name a webhook this apply deletes, or one deleted before: they stay, and never fire.
  const deletedNow = new Map(
    webhooks.filter((w) => w.op === 'delete').map((w) => [w.uid, w as Extract<WebhookOp, { op: 'delete' }>]),
  );
  const deletedBefore = new Map(input.webhooks.filter((w) => w.deleted_at !== null).map((w) => [w.uid, w]));
  for (const automation of definition.automations) {
    automation.triggers.forEach((trigger, i) => {
      // A trigger naming a webhook file follows that file: it never names a deleted webhook.
      if (trigger.kind !== 'webhook' || trigger.webhookUid === null) return;
      const path = `/triggers/${i}/filter/webhook_ids/0`;
      const line = lineOf(input.files, automation.file, trigger.webhookUid);
      const now = deletedNow.get(trigger.webhookUid);
      const before = deletedBefore.get(trigger.webhookUid);
      if (now) {
        warnings.push({
          code: 'trigger_stops_firing',
          file: automation.file,
          line,
          path,
          message: `trigger ${i} names ${trigger.webhookUid} (${now.file}), which this apply deletes: the trigger stops firing`,
        });
      } else if (before && !live.has(before.name)) {
        warnings.push({
          code: 'trigger_names_deleted_webhook',
          file: automation.file,
          line,
          path,
          message: `trigger ${i} names ${trigger.webhookUid}, the deleted webhook ${before.file}: the trigger never fires`,
        });
      } else if (before) {
        warnings.push({
          code: 'trigger_names_deleted_webhook',
          file: automation.file,
          line,
          path,
          message: `trigger ${i} names ${trigger.webhookUid}, a deleted webhook of ${before.file}; that file's webhook now has UID ${live.get(before.name)!.uid}: the trigger never fires`,
        });
      }
    });
  }

  const uidsByName = new Map<string, string | null>();
  for (const row of live.values()) if (desired.has(row.name)) uidsByName.set(row.name, row.uid);
  for (const op of created) uidsByName.set(op.values.name, op.uid);
  const liveAutomations = new Map(input.automations.map((a) => [a.name, a]));
  const desiredAutomations = new Set(definition.automations.map((a) => a.name));
  for (const def of definition.automations) {
    const { values, triggers } = automationValues(def, uidsByName);
    const row = liveAutomations.get(def.name);
    if (!row) {
      const id = input.newAutomationId?.() ?? null;
      automations.push({ op: 'create', id, values, triggers });
      changes.push({ kind: 'automation', name: def.name, file: def.file, action: 'created', id });
      continue;
    }
    const current: AutomationValues = {
      name: row.name,
      file: row.file,
      enabled: row.enabled,
      prompt: row.prompt,
      agent: row.agent,
      config: row.config,
      triggers: row.triggers,
    };
    const fields = differingFields(current, values, ['file', 'enabled', 'prompt', 'agent', 'config', 'triggers']);
    if (fields.length > 0) automations.push({ op: 'update', id: row.id, values, triggers, fields: [...fields] });
    // `concurrency` lives in the applied definition only (no column): a change of it alone updates no row.
    const applied = input.applied?.automations.find((a) => a.name === def.name);
    if (applied && !isDeepStrictEqual(applied.concurrency ?? null, def.concurrency ?? null)) fields.push('concurrency');
    if (fields.length > 0)
      changes.push({ kind: 'automation', name: def.name, file: def.file, action: 'updated', id: row.id, fields });
  }
  for (const row of input.automations) {
    if (!desiredAutomations.has(row.name)) {
      automations.push({ op: 'delete', id: row.id, name: row.name, file: row.file });
      changes.push({ kind: 'automation', name: row.name, file: row.file, action: 'deleted', id: row.id });
    }
  }

  changes.push(...definitionChanges(input.applied, definition));
  const liveCount = live.size + input.automations.length;
  return {
    webhooks,
    automations,
    changes,
    warnings,
    liveChanged: webhooks.length > 0 || automations.length > 0,
    deletesEverything: liveCount > 0 && definition.webhooks.length === 0 && definition.automations.length === 0,
  };
}
