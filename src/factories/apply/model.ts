import type { Diagnostic } from '../../definitions/diagnostic.ts';
import type { FactoryDefinition, WebhookAuthMode } from '../../definitions/model.ts';
import type { AgentConfig } from '../../engine/model.ts';
import type { SourceSpec } from '../../sources/types.ts';

export type FactoryState = 'pending' | 'applied' | 'failed';

/** Reasons of a revision's outcome (PascalCase, as in Kubernetes conditions). */
export type RevisionReason = 'Applied' | 'ValidationFailed' | 'ApplyFailed' | 'DeletionBlocked';

export interface SourceFailure {
  reason: string;
  kind: 'transient' | 'terminal';
  message: string;
  at: string;
}

export interface FactoryRow {
  id: string;
  team_id: string;
  name: string;
  source: SourceSpec;
  state: FactoryState;
  applied_revision: string | null;
  attempted_revision: string | null;
  applied_at: Date | null;
  attempted_at: Date | null;
  errors: Diagnostic[];
  definition: FactoryDefinition | null;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
  generation: number;
  reason: RevisionReason | null;
  message: string | null;
  source_error: SourceFailure | null;
  fetched_at: Date | null;
}

export interface WebhookRow {
  uid: string;
  team_id: string;
  factory_id: string;
  name: string;
  file: string;
  auth_mode: WebhookAuthMode;
  signature_scheme: string | null;
  secret_name: string | null;
  secret_ciphertext: Uint8Array | null;
  secret_version: number;
  delivery_id_header: string | null;
  enabled: boolean;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

/**
 * A trigger as stored in `automations.triggers`: the definition-file shape, with names resolved. A type
 * alias, not an interface, so that it is a `Record<string, unknown>` where the API shows it as one.
 */
export type StoredTrigger = {
  provider: string;
  event: string;
  filter?: Record<string, unknown>;
  schedule?: { name?: string; cron: string };
};

/** A row of `automations`: the one declaration of its columns (the views and the scheduler derive theirs). */
export interface AutomationRow {
  id: string;
  team_id: string;
  factory_id: string;
  name: string;
  file: string;
  enabled: boolean;
  prompt: string;
  agent: string | null;
  config: AgentConfig;
  triggers: StoredTrigger[];
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

export type ChangeAction = 'created' | 'updated' | 'deleted';
export type ChangeKind = 'webhook' | 'automation' | 'factory' | 'agent' | 'runner' | 'scorer' | 'skill' | 'benchmark';

/** One entry of a change set (plan output and `factory_applies.changes`). Never holds a secret value. */
export interface Change {
  kind: ChangeKind;
  name: string;
  file: string;
  action: ChangeAction;
  /** Webhook UID (null in a plan for a webhook the apply would create). */
  uid?: string | null;
  /** Automation ID. */
  id?: string | null;
  /** What changed, for `updated` (`secret` when only the secret value differs). */
  fields?: string[];
  detail?: string;
}

export type WarningCode = 'webhook_renamed' | 'trigger_stops_firing' | 'trigger_names_deleted_webhook';

export interface PlanWarning {
  code: WarningCode;
  file: string;
  line: number;
  path: string;
  message: string;
}

/** What happened to one reconcile request. */
export type ApplyResult = 'applied' | 'unchanged' | 'failed' | 'skipped' | 'none';

export type ApplyTrigger = 'poll' | 'sync' | 'push' | 'watch' | 'start' | 'managed';

export interface ApplyOutcome {
  factoryId: string;
  /** `skipped`: nothing to do (revision already handled); `none`: the source has no revision yet. */
  result: ApplyResult;
  revision: string | null;
  reason: RevisionReason | string | null;
  message: string | null;
  errors: Diagnostic[];
  warnings: PlanWarning[];
  changes: Change[];
  /** The history entry written for it, if any. */
  applyId: string | null;
  /** A failure that may pass if retried soon (network, database); the loops back off and retry it. */
  transient: boolean;
}
