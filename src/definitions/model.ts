/**
 * The desired state a valid factory tree describes, with inheritance already resolved.
 * Produced by validateFactory only when the tree has no error; the reconciler diffs it against live state.
 */
import type { TriggerPolicy } from './trigger-policy.ts';
import type { ConcurrencyPolicy } from './concurrency-key.ts';

export type HarnessType = 'oz' | 'claude' | 'codex' | 'gemini' | 'agentyard';

export type HarnessAuth = { source: 'managedSecret'; secretName: string } | { source: 'workerEnvironment' };

export interface ResolvedHarness {
  type: HarnessType;
  model: string;
  /** null = the harness default. Never set for `oz`. */
  reasoningLevel: string | null;
  /** null = none. Never set for `oz`. */
  auth: HarnessAuth | null;
  /** The built-in agent's endpoint (`agentyard` only); absent = the instance's. */
  baseUrl?: string;
}

export interface McpServerRef {
  warpId: string;
}

/** Execution settings of an agent or automation after agentDefaults → agent → automation. */
export interface ResolvedExecution {
  harness: ResolvedHarness;
  /** Name of a runner: a `runners/` file (runnerSource `file`) or a team runner resolved at apply. */
  runner: string | null;
  runnerSource: 'file' | 'team' | null;
  environmentId: string | null;
  /** Declared secrets plus factory-level secrets, in order, without duplicates. */
  secrets: string[];
  /** Declared servers plus factory-level servers (the declared entry wins on a name clash). */
  mcpServers: Record<string, McpServerRef>;
  /** null = workspace default; `warp` = service-hosted; anything else = a self-hosted worker ID. */
  workerHost: string | null;
  /** The `budget` extension after inheritance; absent keys set no budget. */
  budget?: RunBudget;
}

/**
 * Budgets of a run (the `budget` extension; Run API `config.max_duration_seconds`, `config.max_turns`,
 * `config.max_tokens`, `config.max_cost_usd`) and the daily caps of where it starts (docs/governance.md).
 */
export interface RunBudget {
  maxDurationSeconds?: number;
  maxTurns?: number;
  maxTokens?: number;
  maxCostUsd?: number;
  /** Daily caps of the agent or automation (an automation's are only those it declares). */
  dailyRuns?: number;
  dailyCostUsd?: number;
}

/** The daily caps of a factory (`budget` in factory.yaml), over every run of the factory. */
export interface DailyCaps {
  dailyRuns?: number;
  dailyCostUsd?: number;
}

export const RUN_BUDGET_KEYS = [
  'maxDurationSeconds',
  'maxTurns',
  'maxTokens',
  'maxCostUsd',
  'dailyRuns',
  'dailyCostUsd',
] as const;
export const DAILY_CAP_KEYS = ['dailyRuns', 'dailyCostUsd'] as const;

/** Execution keys as written at one level; `undefined` = not declared (inherit). */
export interface ExecutionOverrides {
  model?: string | null;
  harness?: {
    type?: HarnessType | null;
    model?: string | null;
    reasoningLevel?: string | null;
    auth?: HarnessAuth | null;
    baseUrl?: string | null;
  };
  runner?: string | null;
  environmentId?: string | null;
  secrets?: string[];
  mcpServers?: Record<string, McpServerRef>;
  workerHost?: string | null;
  budget?: { [K in (typeof RUN_BUDGET_KEYS)[number]]?: number | null };
}

export type CredentialStrategy = 'EXECUTOR' | 'CREATOR';

export type AgentType = 'CUSTOM' | 'FOREMAN' | 'TRIAGE' | 'SPEC' | 'IMPLEMENT' | 'REVIEW' | 'VERIFY';

export interface RepositoryRef {
  owner: string;
  name: string;
}

export interface CloudProviders {
  gcp?: {
    projectNumber: string;
    workloadIdentityFederationPoolId: string;
    workloadIdentityFederationProviderId: string;
    serviceAccountEmail?: string;
  };
  aws?: { roleArn: string };
}

export interface FactorySettings {
  file: string;
  schemaVersion: string;
  name: string;
  description: string | null;
  alias: string | null;
  /** undefined = not declared: leave the stored value unchanged. */
  credentialStrategy: CredentialStrategy | undefined;
  repositories: RepositoryRef[];
  secrets: string[];
  mcpServers: Record<string, McpServerRef>;
  /** undefined = not declared: leave the stored set alone; [] = detach all. */
  integrations: { type: string }[] | undefined;
  cloudProviders: CloudProviders | undefined;
  /** Who may start runs through provider events, defaults filled in (an Agentyard extension). */
  triggerPolicy: TriggerPolicy;
  /** The factory's daily caps (an Agentyard extension); absent: none. */
  budget?: DailyCaps;
  /** Most active runs of the factory at once (an Agentyard extension); absent: no cap. */
  maxActiveRuns?: number;
  agentDefaults: ExecutionOverrides;
}

export interface SkillFile {
  /** Name of the directory holding SKILL.md. */
  name: string;
  /** Path relative to the factory root. */
  path: string;
  content: string;
}

export interface AgentDefinition {
  name: string;
  file: string;
  description: string | null;
  agentType: AgentType;
  /** undefined = inherit the factory's. */
  credentialStrategy: CredentialStrategy | undefined;
  prompt: string;
  declared: ExecutionOverrides;
  execution: ResolvedExecution;
  /** Skills under agents/<name>/skills/, visible only to this agent. */
  skills: SkillFile[];
}

export interface PayloadFilter {
  [field: string]: unknown;
}

export interface FilterMatcher {
  in?: (string | number)[];
  not_in?: (string | number)[];
}

/** Discriminated by `kind`: webhook and schedule triggers have their own shapes; the rest share one. */
export type Trigger =
  | {
      kind: 'webhook';
      provider: 'webhook';
      event: 'received';
      /**
       * The single webhook the trigger selects, by UID or by its file's name (`ci` for `webhooks/ci.yaml`):
       * exactly one of the two is set. A name is resolved to the webhook's UID at apply.
       */
      webhookUid: string | null;
      webhookName: string | null;
      payload: PayloadFilter | null;
    }
  | {
      kind: 'schedule';
      provider: 'schedule';
      event: 'cron_fired';
      schedule: { name: string | null; cron: string } | null;
      scheduleIds: string[];
    }
  | {
      kind: 'provider';
      provider: string;
      event: string;
      /** Canonical snake_case keys; bare lists normalised to `{in: [...]}`. */
      filter: Record<string, FilterMatcher>;
      /** False when this service does not evaluate the provider (the definition still validates). */
      runsHere: boolean;
    };

export interface AutomationDefinition {
  name: string;
  file: string;
  enabled: boolean;
  agent: string;
  prompt: string;
  declared: ExecutionOverrides;
  execution: ResolvedExecution;
  triggers: Trigger[];
  /** The `concurrency` extension, defaults filled in; absent: none. */
  concurrency?: ConcurrencyPolicy;
}

export interface RunnerDefinition {
  name: string;
  file: string;
  description: string | null;
  setupCommands: string[];
  instanceShape: { vcpus: number; memoryGb: number } | null;
  platform: {
    os: 'linux' | 'macos';
    arch: 'x86_64' | 'aarch64';
    dockerImage: string | null;
    macVersion: string | null;
  };
  /** Agentyard's `x-agentyard-limits` extension, when the file declares it. */
  limits?: RunnerLimits;
  /** Agentyard's `network` extension (the egress policy), when the file declares it. */
  network?: 'none' | { allow: string[] };
}

/** A runner's sandbox limits (`x-agentyard-limits`); each tightens the server's own. */
export interface RunnerLimits {
  processes?: number;
  tmpMiB?: number;
  workspaceMiB?: number;
  events?: number;
  outputMiB?: number;
  nestedUserNamespaces?: boolean;
}

export interface ScorerDefinition {
  name: string;
  file: string;
  displayName: string | null;
  description: string | null;
  agents: string[];
  labels: { value: string; score: number; description: string | null }[];
  passingScore: number;
  model: string;
  samplingRate: number;
  enabled: boolean;
  output: 'classification';
  selfImprovement: boolean;
  rubric: string;
}

export type WebhookAuthMode = 'token' | 'url_token' | 'signature';

export interface WebhookDefinition {
  /** The file stem. */
  name: string;
  file: string;
  authMode: WebhookAuthMode;
  signatureScheme: string | null;
  secretName: string;
  deliveryIdHeader: string | null;
  enabled: boolean;
}

export interface BenchmarkSuiteDefinition {
  slug: string;
  file: string;
  name: string;
  description: string | null;
  agent: string;
  tasks: {
    slug: string;
    file: string;
    title: string;
    prompt: string;
    successCriteria: string;
    sourceRunId: string | null;
    startingRepoRefs: string[];
  }[];
}

export interface FactoryDefinition {
  schemaVersion: string;
  factory: FactorySettings;
  /** Name of the FOREMAN agent. */
  foreman: string;
  agents: AgentDefinition[];
  automations: AutomationDefinition[];
  runners: RunnerDefinition[];
  scorers: ScorerDefinition[];
  /** Shared skills under skills/, visible to every agent. */
  skills: SkillFile[];
  webhooks: WebhookDefinition[];
  benchmarks: BenchmarkSuiteDefinition[];
}
