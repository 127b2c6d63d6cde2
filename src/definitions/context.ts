/**
 * What apply-time validation may know about live state. Every member is optional: a check whose
 * input is absent is skipped and listed in `stateDependentChecksNotRun` (the offline `validate` runs none).
 */
export interface ValidationContext {
  /** Does a managed team secret of this name exist? */
  secretExists?(name: string): boolean | Promise<boolean>;
  /** Is the secret's value URL-safe (`A-Za-z0-9-._~`), as a `url_token` webhook needs? */
  secretIsUrlSafe?(name: string): boolean | Promise<boolean>;
  /** UIDs of the factory's webhooks (live ones plus those this apply would keep). */
  knownWebhookUids?: Set<string>;
  /** Does a team runner (not declared in the tree) of this name exist? */
  teamRunnerExists?(name: string): boolean;
  /** Has the team connected this integration (`slack`, `linear`)? */
  integrationConnected?(type: string): boolean | Promise<boolean>;
  /**
   * The IDs of names in a name alias (`channels`, `users`, `itemUsers`; `teams`, `projects`, `states`,
   * `issues`) as the provider knows them; a name it does not know is absent from the answer.
   */
  resolveNames?(provider: string, field: string, names: readonly string[]): Promise<Map<string, string[]>>;
  /** The deployment's model catalogue: unknown ids warn, or are errors when `closed`. */
  models?: { ids: ReadonlySet<string>; closed: boolean };
  /** What the deployment does with settings it accepts but does not act on: one warning where each is set. */
  deploymentNotes?: DeploymentNotes;
}

/** Settings a deployment may accept without acting on them; the value says what it does instead. */
export interface DeploymentNotes {
  scorers?: string;
  runnerInstanceShape?: string;
  runnerSetupCommands?: string;
  macosRunner?: string;
  credentialStrategy?: string;
}

export type StateDependentCheckKind =
  | 'secret_exists'
  | 'secret_url_safe'
  | 'webhook_uid'
  | 'team_runner'
  | 'integration_connected';

export interface StateDependentCheck {
  check: StateDependentCheckKind;
  file: string;
  path: string;
  /** What would have been checked, e.g. the secret or runner name. */
  subject: string;
}

/** A name the product resolves to an ID at apply (Linear/Slack name aliases); not resolvable here. */
export interface DeferredResolution {
  file: string;
  path: string;
  field: string;
  kind: string;
}
