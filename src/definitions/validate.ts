import { checkTrigger, newScheduleNames } from './check-triggers.ts';
import type { RawTrigger, TriggerEnv } from './check-triggers.ts';
import { CONNECTED_INTEGRATIONS } from './triggers.ts';
import type { FilterMatcher } from './model.ts';
import type { DiagnosticCode } from './codes.ts';
import type {
  DeferredResolution,
  DeploymentNotes,
  StateDependentCheck,
  StateDependentCheckKind,
  ValidationContext,
} from './context.ts';
import { hasErrors, normalizeDiagnostics } from './diagnostic.ts';
import type { Diagnostic, Severity } from './diagnostic.ts';
import { didYouMean } from './levenshtein.ts';
import { loadFactoryFiles } from './load.ts';
import type { ClassifiedFile, FactoryFileInput, FileKind } from './load.ts';
import type {
  AgentDefinition,
  AgentType,
  AutomationDefinition,
  BenchmarkSuiteDefinition,
  CloudProviders,
  CredentialStrategy,
  DailyCaps,
  ExecutionOverrides,
  FactoryDefinition,
  FactorySettings,
  McpServerRef,
  ResolvedExecution,
  RunnerDefinition,
  RunnerLimits,
  ScorerDefinition,
  SkillFile,
  Trigger,
  WebhookAuthMode,
  WebhookDefinition,
} from './model.ts';
import { DAILY_CAP_KEYS } from './model.ts';
import { isSelfHostedWorker, resolveExecution } from './resolve.ts';
import type { ExecutionLevel, Origin } from './resolve.ts';
import { SCHEMA_VERSION, checkSchema } from './schemas.ts';
import type { SchemaKind } from './schemas.ts';
import { CREDENTIAL_HEADERS } from './signature-schemes.ts';
import { parseMarkdownSource, parseYamlSource } from './yaml.ts';
import { triggerPolicyOf } from './trigger-policy.ts';
import { allowEntryProblem } from './network-policy.ts';
import { concurrencyOf, parseKeyTemplate } from './concurrency-key.ts';
import { TreeBudget } from './work-budget.ts';
import type { ParsedSource, Position, PositionTarget } from './yaml.ts';

export interface ValidationResult {
  /** No diagnostic of severity `error`. */
  valid: boolean;
  schemaVersion: string;
  diagnostics: Diagnostic[];
  /** The resolved desired state; only when `valid`. */
  definition?: FactoryDefinition;
  /** Checks that need live state the caller did not provide (see ValidationContext). */
  stateDependentChecksNotRun: StateDependentCheck[];
  /** Names the product resolves to IDs at apply (Linear/Slack name aliases). */
  deferredResolutions: DeferredResolution[];
}

/** Most webhooks a factory may declare. */
export const MAX_WEBHOOKS_PER_FACTORY = 20;

const MAX_ALIAS_LENGTH = 60;
const MACOS_SHAPES = new Set(['4/7', '6/14', '8/14', '12/28', '12/56']);
const LINUX_MAX_VCPUS = 32;
const LINUX_MAX_MEMORY_GB = 64;
const INTEGRATION_TYPES = new Set(['slack', 'linear', 'jira', 'microsoft-teams']);

const SCHEMA_OF: Partial<Record<FileKind, SchemaKind>> = {
  factory: 'factory',
  agent: 'agent',
  automation: 'automation',
  runner: 'runner',
  scorer: 'scorer',
  webhook: 'webhook',
  'benchmark-suite': 'benchmark-suite',
  'benchmark-task': 'benchmark-task',
};

type Json = Record<string, unknown>;

/** A resource file after parsing; `value` is set only when it also passed its schema. */
interface Checked {
  file: ClassifiedFile;
  source: ParsedSource;
  value: Json | undefined;
}

interface ReportOptions {
  target?: PositionTarget;
  severity?: Severity;
  /** Position to use instead of the pointer's. */
  position?: Position;
}

class Reporter {
  readonly diagnostics: Diagnostic[] = [];

  add(source: ParsedSource, code: DiagnosticCode, pointer: string, message: string, options: ReportOptions = {}): void {
    const pos = options.position ?? source.locate(pointer, options.target ?? 'value');
    this.diagnostics.push({
      file: source.file,
      line: pos.line,
      column: pos.column,
      path: pointer,
      code,
      message,
      severity: options.severity ?? 'error',
    });
  }
}

function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function prompt(source: ParsedSource): string {
  return (source.body ?? '').trim();
}

/** Execution keys of one level, as declared (`undefined` = not declared). */
/** factory.yaml's `budget` (its daily caps), checked by the schema: `{budget}` when it sets a cap, else nothing. */
function dailyCapsOf(value: unknown): { budget?: DailyCaps } {
  if (!value || typeof value !== 'object') return {};
  const caps: DailyCaps = {};
  for (const key of DAILY_CAP_KEYS) {
    const n = (value as Record<string, unknown>)[key];
    if (typeof n === 'number') caps[key] = n;
  }
  return Object.keys(caps).length ? { budget: caps } : {};
}

function overridesOf(value: Json): ExecutionOverrides {
  const out: ExecutionOverrides = {};
  for (const key of [
    'model',
    'harness',
    'runner',
    'environmentId',
    'secrets',
    'mcpServers',
    'workerHost',
    'budget',
  ] as const) {
    if (Object.hasOwn(value, key)) (out as Record<string, unknown>)[key] = value[key];
  }
  return out;
}

export async function validateFactory(
  files: readonly FactoryFileInput[],
  context?: ValidationContext,
): Promise<ValidationResult> {
  return new FactoryValidation(context).run(files);
}

class FactoryValidation {
  private readonly context: ValidationContext | undefined;
  private readonly reporter = new Reporter();
  private readonly sources = new Map<string, ParsedSource>();
  /** Keys, nodes and aliases every file of the tree may use in all (each file also has its own budget). */
  private readonly budget = new TreeBudget();
  private readonly notRun: StateDependentCheck[] = [];
  private readonly deferred: DeferredResolution[] = [];
  private readonly secretRefs: { name: string; source: ParsedSource; pointer: string }[] = [];
  private readonly integrationRefs: { type: string; source: ParsedSource; pointer: string }[] = [];
  private readonly aliasRefs: {
    source: ParsedSource;
    pointer: string;
    field: string;
    provider: string;
    matcher: FilterMatcher;
  }[] = [];
  private readonly runnerRefs: { name: string; source: ParsedSource; pointer: string }[] = [];
  private readonly urlSafeRefs: { name: string; source: ParsedSource }[] = [];

  constructor(context: ValidationContext | undefined) {
    this.context = context;
  }

  private report(
    source: ParsedSource,
    code: DiagnosticCode,
    pointer: string,
    message: string,
    options?: ReportOptions,
  ): void {
    this.reporter.add(source, code, pointer, message, options);
  }

  private reportAt(origin: Origin, code: DiagnosticCode, message: string): void {
    const source = this.sources.get(origin.file);
    if (source) this.report(source, code, origin.pointer, message);
  }

  private skipped(check: StateDependentCheckKind, source: ParsedSource, pointer: string, subject: string): void {
    this.notRun.push({ check, file: source.file, path: pointer, subject });
  }

  async run(inputs: readonly FactoryFileInput[]): Promise<ValidationResult> {
    const tree = loadFactoryFiles(inputs);
    this.reporter.diagnostics.push(...tree.diagnostics);
    const byKind = new Map<FileKind, Checked[]>();
    const skills: ClassifiedFile[] = [];
    for (const file of tree.files) {
      if (file.kind === 'skill' || file.kind === 'agent-skill') {
        skills.push(file);
        continue;
      }
      const checked = this.parseAndCheckSchema(file);
      const list = byKind.get(file.kind) ?? [];
      list.push(checked);
      byKind.set(file.kind, list);
    }
    const of = (kind: FileKind): Checked[] => byKind.get(kind) ?? [];

    const factoryFile = of('factory')[0];
    const runnerNames = new Set(of('runner').map((c) => c.file.name));
    const agentNames = new Set(of('agent').map((c) => c.file.name));
    const webhookNames = new Set(of('webhook').map((c) => c.file.name));

    const factory = factoryFile ? this.checkFactory(factoryFile) : undefined;
    const runners = of('runner')
      .map((c) => this.checkRunner(c))
      .filter((r) => r !== undefined);
    const foreman = this.checkForeman(of('agent'), factoryFile);
    const agentDecls = of('agent')
      .map((c) => this.checkAgent(c))
      .filter((a) => a !== undefined);
    const automationDecls = of('automation')
      .map((c) => this.checkAutomation(c, agentNames, foreman, webhookNames))
      .filter((a) => a !== undefined);
    const scorers = of('scorer')
      .map((c) => this.checkScorer(c, agentNames))
      .filter((s) => s !== undefined);
    const webhooks = this.checkWebhooks(of('webhook'));
    const benchmarks = this.checkBenchmarks(of('benchmark-suite'), of('benchmark-task'), agentNames);

    // Inheritance: agentDefaults → agent → automation.
    const runnerByName = new Map(runners.map((r) => [r.name, r]));
    const agents: AgentDefinition[] = [];
    const agentLevels = new Map<string, ExecutionLevel>();
    for (const decl of agentDecls) {
      const level: ExecutionLevel = { declared: decl.declared, file: decl.file, base: '' };
      agentLevels.set(decl.name, level);
      if (!factory) continue;
      const execution = this.resolve(
        [factory.defaultsLevel, level],
        factory.settings,
        runnerByName,
        `agent \`${decl.name}\``,
      );
      agents.push({
        ...decl,
        execution,
        skills: skills.filter((s) => s.kind === 'agent-skill' && s.owner === decl.name).map(skillOf),
      });
    }
    const automations: AutomationDefinition[] = [];
    for (const decl of automationDecls) {
      if (!factory) continue;
      const agentLevel = agentLevels.get(decl.agent);
      const levels = [
        factory.defaultsLevel,
        ...(agentLevel ? [agentLevel] : []),
        { declared: decl.declared, file: decl.file, base: '', ownDailyCaps: true },
      ];
      automations.push({
        ...decl,
        execution: this.resolve(levels, factory.settings, runnerByName, `automation \`${decl.name}\``),
      });
    }
    for (const skill of skills) {
      if (skill.kind === 'agent-skill' && !agentNames.has(skill.owner!)) {
        this.reporter.diagnostics.push({
          file: skill.path,
          line: 1,
          column: 1,
          path: '',
          code: 'FF_INVALID_REFERENCE',
          message: `skill of agent \`${skill.owner}\`, which has no agents/${skill.owner}/agent.md`,
          severity: 'error',
        });
      }
    }

    await this.checkRunnerRefs(runnerNames);
    await this.checkSecretRefs();
    await this.checkIntegrationRefs();

    const diagnostics = normalizeDiagnostics(this.reporter.diagnostics);
    const valid = !hasErrors(diagnostics);
    const result: ValidationResult = {
      valid,
      schemaVersion: factory?.settings.schemaVersion ?? SCHEMA_VERSION,
      diagnostics,
      stateDependentChecksNotRun: this.notRun,
      deferredResolutions: this.deferred,
    };
    if (valid && factory && foreman) {
      result.definition = {
        schemaVersion: factory.settings.schemaVersion,
        factory: factory.settings,
        foreman,
        agents,
        automations,
        runners,
        scorers,
        skills: skills.filter((s) => s.kind === 'skill').map(skillOf),
        webhooks,
        benchmarks,
      };
    }
    return result;
  }

  private parseAndCheckSchema(file: ClassifiedFile): Checked {
    const markdown = file.path.endsWith('.md');
    const source = markdown
      ? parseMarkdownSource(file.path, file.content, this.budget)
      : parseYamlSource(file.path, file.content, this.budget);
    this.sources.set(file.path, source);
    this.reporter.diagnostics.push(...source.diagnostics);
    if (!source.value) return { file, source, value: undefined };
    const schema = SCHEMA_OF[file.kind];
    let ok = true;
    for (const issue of schema ? checkSchema(schema, source.value) : []) {
      let message = issue.message;
      if (issue.code === 'FF_UNKNOWN_FIELD' && issue.unknownKey !== undefined)
        message += didYouMean(issue.unknownKey, issue.allowed ?? []);
      this.report(source, issue.code, issue.pointer, message, {
        target: issue.target,
        severity: issue.severity,
        position: source.locate(issue.at, issue.target),
      });
      if (issue.severity === 'error') ok = false;
    }
    return { file, source, value: ok ? source.value : undefined };
  }

  // ---------------------------------------------------------------- factory.yaml

  private checkFactory(checked: Checked): { settings: FactorySettings; defaultsLevel: ExecutionLevel } | undefined {
    const { source, value: v } = checked;
    if (!v) return undefined;
    let ok = true;
    const error = (code: DiagnosticCode, pointer: string, message: string, target?: PositionTarget): void => {
      this.report(source, code, pointer, message, target ? { target } : {});
      ok = false;
    };
    const schemaVersion = str(v.schemaVersion) ?? SCHEMA_VERSION;
    if (schemaVersion !== SCHEMA_VERSION) {
      error(
        'FF_UNSUPPORTED_VERSION',
        '/schemaVersion',
        `schemaVersion \`${schemaVersion}\` is not supported; use \`${SCHEMA_VERSION}\``,
      );
    }
    const alias = str(v.alias);
    if (alias !== null && [...alias.trim()].length > MAX_ALIAS_LENGTH) {
      error('FF_INVALID_VALUE', '/alias', `\`alias\` must be at most ${MAX_ALIAS_LENGTH} characters after trimming`);
    }
    const repositories = (v.repositories as { owner: string; name: string }[]).map((r) => ({
      owner: r.owner.trim(),
      name: r.name.trim(),
    }));
    const seenRepos = new Set<string>();
    repositories.forEach((r, i) => {
      const key = `${r.owner}/${r.name}`.toLowerCase();
      if (seenRepos.has(key))
        error('FF_DUPLICATE_KEY', `/repositories/${i}`, `repository \`${r.owner}/${r.name}\` is listed twice`);
      seenRepos.add(key);
    });
    let integrations: { type: string }[] | undefined;
    if (Array.isArray(v.integrations)) {
      integrations = [];
      const types = new Set<string>();
      (v.integrations as { type: string }[]).forEach((entry, i) => {
        const type = entry.type.trim().toLowerCase();
        const at = `/integrations/${i}/type`;
        if (type === 'github')
          error('FF_INVALID_VALUE', at, 'GitHub is not an integration here: it is reached through `repositories`');
        else if (!INTEGRATION_TYPES.has(type))
          error(
            'FF_INVALID_VALUE',
            at,
            `unknown integration \`${entry.type}\`; use slack, linear, jira or microsoft-teams${didYouMean(type, INTEGRATION_TYPES)}`,
          );
        else if (types.has(type)) error('FF_DUPLICATE_KEY', at, `integration \`${type}\` is listed twice`);
        else if (!CONNECTED_INTEGRATIONS.has(type))
          this.report(
            source,
            'FF_NOT_SUPPORTED_HERE',
            at,
            `\`${type}\` is accepted but Agentyard does not connect it (slack and linear are connected through /api/v1/integrations)`,
            { severity: 'warning' },
          );
        types.add(type);
        integrations!.push({ type });
        if (CONNECTED_INTEGRATIONS.has(type)) this.integrationRefs.push({ type, source, pointer: at });
      });
      if (types.has('linear') && types.has('jira'))
        error('FF_INVALID_VALUE', '/integrations', 'at most one issue tracker: choose linear or jira', 'key');
    }
    const defaults = v.agentDefaults as Json;
    const hasModel = typeof defaults.model === 'string';
    const hasHarness = defaults.harness !== undefined && defaults.harness !== null;
    if (!hasModel && !hasHarness) {
      error(
        'FF_MISSING_REQUIRED',
        '/agentDefaults/model',
        '`agentDefaults` must set exactly one of `model` or `harness`',
      );
    } else if (hasHarness) {
      const harness = defaults.harness as Json;
      for (const key of ['type', 'model']) {
        if (typeof harness[key] !== 'string')
          error('FF_MISSING_REQUIRED', `/agentDefaults/harness/${key}`, `\`agentDefaults.harness\` needs \`${key}\``);
      }
    }
    if (!this.checkExecutionKeys(source, defaults, '/agentDefaults', true)) ok = false;
    if (str(defaults.runner) === null && str(defaults.environmentId) === null) {
      error(
        'FF_MISSING_REQUIRED',
        '/agentDefaults/runner',
        '`agentDefaults` must name a `runner` (or set `environmentId`) so every run has somewhere to execute',
      );
    }
    (Array.isArray(v.secrets) ? (v.secrets as string[]) : []).forEach((name, i) =>
      this.secretRefs.push({ name, source, pointer: `/secrets/${i}` }),
    );
    if (!ok) return undefined;
    if (v.credentialStrategy !== undefined && v.credentialStrategy !== null)
      this.note(source, 'credentialStrategy', '/credentialStrategy');
    const cloud = (v.cloudProviders ?? v.providers) as CloudProviders | undefined;
    const settings: FactorySettings = {
      file: checked.file.path,
      schemaVersion,
      name: (v.name as string).trim(),
      description: str(v.description),
      alias: alias === null ? null : alias.trim(),
      credentialStrategy: (v.credentialStrategy ?? undefined) as CredentialStrategy | undefined,
      repositories,
      secrets: [...((v.secrets as string[] | undefined) ?? [])],
      mcpServers: { ...((v.mcpServers as Record<string, McpServerRef> | undefined) ?? {}) },
      integrations,
      cloudProviders: cloud,
      triggerPolicy: triggerPolicyOf(v.triggerPolicy),
      ...dailyCapsOf(v.budget),
      ...(typeof v.maxActiveRuns === 'number' ? { maxActiveRuns: v.maxActiveRuns } : {}),
      agentDefaults: overridesOf(defaults),
    };
    return {
      settings,
      defaultsLevel: { declared: settings.agentDefaults, file: checked.file.path, base: '/agentDefaults' },
    };
  }

  /**
   * Rules of the execution keys at one level that JSON Schema does not express. Returns false after
   * reporting an error. Secret and runner names are collected for the state-dependent checks.
   */
  private checkExecutionKeys(source: ParsedSource, v: Json, base: string, isDefaults: boolean): boolean {
    let ok = true;
    const error = (code: DiagnosticCode, pointer: string, message: string): void => {
      this.report(source, code, pointer, message);
      ok = false;
    };
    if (v.model !== undefined && v.harness !== undefined) {
      error(
        'FF_INVALID_VALUE',
        `${base}/harness`,
        '`model` and `harness` are mutually exclusive (`model: X` is short for `harness: {type: oz, model: X}`)',
      );
    }
    const harness = v.harness as Json | undefined | null;
    if (harness) {
      const keys = ['type', 'model', 'reasoningLevel', 'auth', 'baseUrl'].filter((k) => Object.hasOwn(harness, k));
      if (!isDefaults && keys.length === 0) {
        error(
          'FF_MISSING_REQUIRED',
          `${base}/harness`,
          'a harness override must set at least one of `type`, `model`, `reasoningLevel`, `auth`, `baseUrl`',
        );
      }
      if (typeof harness.baseUrl === 'string' && typeof harness.type === 'string' && harness.type !== 'agentyard')
        error(
          'FF_INVALID_VALUE',
          `${base}/harness/baseUrl`,
          "`baseUrl` is the built-in agent's endpoint: only `harness.type: agentyard` takes it",
        );
      if (harness.type === 'oz') {
        if (harness.reasoningLevel)
          error('FF_INVALID_VALUE', `${base}/harness/reasoningLevel`, 'the oz harness has no `reasoningLevel`');
        if (harness.auth) error('FF_INVALID_VALUE', `${base}/harness/auth`, 'the oz harness takes no `auth`');
      }
      const auth = harness.auth as Json | null | undefined;
      if (auth) {
        if (auth.source === 'managedSecret') {
          if (typeof auth.secretName !== 'string')
            error(
              'FF_MISSING_REQUIRED',
              `${base}/harness/auth/secretName`,
              '`auth.source: managedSecret` needs `secretName`',
            );
          else this.secretRefs.push({ name: auth.secretName, source, pointer: `${base}/harness/auth/secretName` });
        } else if (auth.secretName !== undefined) {
          error(
            'FF_INVALID_VALUE',
            `${base}/harness/auth/secretName`,
            '`auth.source: workerEnvironment` takes no `secretName`: the worker environment provides the key',
          );
        }
      }
    }
    const workerHost = str(v.workerHost);
    if (workerHost && workerHost !== 'warp' && workerHost.toLowerCase().startsWith('warp')) {
      error(
        'FF_INVALID_VALUE',
        `${base}/workerHost`,
        `worker IDs must not start with \`warp\` (\`warp\` alone means service-hosted)`,
      );
    }
    if (Array.isArray(v.secrets))
      (v.secrets as string[]).forEach((name, i) =>
        this.secretRefs.push({ name, source, pointer: `${base}/secrets/${i}` }),
      );
    if (typeof v.runner === 'string') this.runnerRefs.push({ name: v.runner, source, pointer: `${base}/runner` });
    if (typeof v.model === 'string') this.checkModel(source, `${base}/model`, v.model);
    if (harness && typeof harness.model === 'string') this.checkModel(source, `${base}/harness/model`, harness.model);
    return ok;
  }

  /** A setting the deployment accepts without acting on it: a warning saying what it does instead. */
  private note(source: ParsedSource, setting: keyof DeploymentNotes, pointer: string, position?: Position): void {
    const text = this.context?.deploymentNotes?.[setting];
    if (!text) return;
    this.report(source, 'FF_NOT_SUPPORTED_HERE', pointer, text, {
      severity: 'warning',
      target: 'key',
      ...(position ? { position } : {}),
    });
  }

  /** A model id outside the deployment's catalogue: a warning with the nearest id (an error when it is closed). */
  private checkModel(source: ParsedSource, pointer: string, id: string): void {
    const models = this.context?.models;
    if (!models || models.ids.has(id)) return;
    this.report(
      source,
      'FF_INVALID_REFERENCE',
      pointer,
      `unknown model \`${id}\`${didYouMean(id, models.ids)} (${
        models.closed
          ? 'this deployment runs only the models of its catalogue, GET /api/v1/agent/models'
          : 'not in GET /api/v1/agent/models; the harness is given it as it is'
      })`,
      { severity: models.closed ? 'error' : 'warning' },
    );
  }

  // ---------------------------------------------------------------- agents

  private checkForeman(agents: Checked[], factoryFile: Checked | undefined): string | undefined {
    const foremen = agents.filter((a) => a.value && (a.value.agentType === 'FOREMAN' || a.value.agentType === 'MAIN'));
    const unreadable = agents.some((a) => !a.value);
    foremen.slice(1).forEach((a) => {
      this.report(
        a.source,
        'FF_DUPLICATE_KEY',
        '/agentType',
        `agent \`${a.file.name}\` is a second foreman (\`${foremen[0]!.file.name}\` is one); exactly one agent may be FOREMAN/MAIN`,
      );
    });
    if (foremen.length === 0 && !unreadable && factoryFile) {
      const message =
        agents.length === 0
          ? 'the factory declares no agent: add agents/<name>/agent.md with `agentType: FOREMAN`'
          : 'no agent is the foreman: set `agentType: FOREMAN` on exactly one agent';
      this.report(factoryFile.source, 'FF_MISSING_REQUIRED', '', message, { position: { line: 1, column: 1 } });
    }
    return foremen.length === 1 ? foremen[0]!.file.name : undefined;
  }

  private checkAgent(checked: Checked): Omit<AgentDefinition, 'execution' | 'skills'> | undefined {
    const { source, value: v } = checked;
    if (!v) return undefined;
    if (!this.checkExecutionKeys(source, v, '', false)) return undefined;
    if (v.credentialStrategy !== undefined && v.credentialStrategy !== null)
      this.note(source, 'credentialStrategy', '/credentialStrategy');
    const type = (v.agentType ?? 'CUSTOM') as string;
    return {
      name: checked.file.name,
      file: checked.file.path,
      description: str(v.description),
      agentType: (type === 'MAIN' ? 'FOREMAN' : type) as AgentType,
      credentialStrategy: (v.credentialStrategy ?? undefined) as CredentialStrategy | undefined,
      prompt: prompt(source),
      declared: overridesOf(v),
    };
  }

  // ---------------------------------------------------------------- automations

  private checkAutomation(
    checked: Checked,
    agentNames: ReadonlySet<string>,
    foreman: string | undefined,
    webhookNames: ReadonlySet<string>,
  ): Omit<AutomationDefinition, 'execution'> | undefined {
    const { source, value: v } = checked;
    if (!v) return undefined;
    let ok = this.checkExecutionKeys(source, v, '', false);
    const agent = str(v.agent) ?? foreman;
    if (typeof v.agent === 'string' && !agentNames.has(v.agent)) {
      this.report(
        source,
        'FF_INVALID_REFERENCE',
        '/agent',
        `no agent named \`${v.agent}\` (agents/${v.agent}/agent.md)${didYouMean(v.agent, agentNames)}`,
      );
      ok = false;
    }
    const body = prompt(source);
    if (!body) {
      this.report(
        source,
        'FF_MISSING_REQUIRED',
        '',
        'the body after the frontmatter is the prompt each run starts with, and it is empty',
        {
          severity: 'warning',
          position: { line: source.bodyLine ?? 1, column: 1 },
        },
      );
    }
    const env: TriggerEnv = {
      report: (code, pointer, message, options) => {
        this.report(source, code, pointer, message, options);
        if ((options?.severity ?? 'error') === 'error') ok = false;
      },
      webhookFileNames: webhookNames,
      context: this.context,
      notRun: (check, pointer, subject) => this.skipped(check, source, pointer, subject),
      deferred: (pointer, field, kind, matcher) => {
        this.deferred.push({ file: source.file, path: pointer, field, kind });
        this.aliasRefs.push({ source, pointer, field, provider: kind.replace(/_name_alias$/, ''), matcher });
      },
    };
    const schedules = newScheduleNames();
    const triggers: Trigger[] = [];
    (v.triggers as RawTrigger[]).forEach((raw, i) => {
      const trigger = checkTrigger(env, `/triggers/${i}`, raw, schedules);
      if (trigger) triggers.push(trigger);
    });
    const concurrency = concurrencyOf(v.concurrency);
    if (concurrency) {
      const parsed = parseKeyTemplate(concurrency.key);
      if ('error' in parsed) {
        this.report(source, 'FF_INVALID_VALUE', '/concurrency/key', `concurrency.key: ${parsed.error}`);
        ok = false;
      }
    }
    if (!ok || agent === undefined) return undefined;
    return {
      name: checked.file.name,
      file: checked.file.path,
      enabled: v.enabled !== false,
      agent,
      prompt: body,
      declared: overridesOf(v),
      triggers,
      ...(concurrency ? { concurrency } : {}),
    };
  }

  // ---------------------------------------------------------------- inheritance

  private resolve(
    levels: ExecutionLevel[],
    factory: FactorySettings,
    runners: ReadonlyMap<string, RunnerDefinition>,
    subject: string,
  ): ResolvedExecution {
    const { execution, origins, problems } = resolveExecution(levels);
    for (const p of problems) this.reportAt(p.origin, 'FF_MISSING_REQUIRED', p.message);
    // A conflict between two inherited settings is reported where the later (overriding) one is declared.
    const depth = (origin: Origin | undefined): number =>
      origin ? levels.findIndex((l) => l.file === origin.file) : -1;
    const later = (a: Origin | undefined, b: Origin | undefined): Origin | undefined =>
      depth(b) > depth(a) ? b : (a ?? b);
    const auth = execution.harness.auth;
    if (auth?.source === 'workerEnvironment' && !isSelfHostedWorker(execution.workerHost)) {
      const at = later(origins.auth, origins.workerHost);
      const host = execution.workerHost === null ? 'the workspace default host' : `\`${execution.workerHost}\``;
      if (at)
        this.reportAt(
          at,
          'FF_INVALID_VALUE',
          `${subject} uses \`auth.source: workerEnvironment\` but runs on ${host}; that needs a self-hosted \`workerHost\` (the key comes from the worker)`,
        );
    }
    const runner = execution.runner ? runners.get(execution.runner) : undefined;
    if (runner?.platform.os === 'macos' && isSelfHostedWorker(execution.workerHost)) {
      const at = later(origins.runner, origins.workerHost);
      if (at)
        this.reportAt(
          at,
          'FF_INVALID_VALUE',
          `${subject} runs on runner \`${runner.name}\` (macOS) and self-hosted worker \`${execution.workerHost}\`; self-hosted workers run Linux only`,
        );
    }
    const secrets = [...new Set([...execution.secrets, ...factory.secrets])];
    return {
      ...execution,
      runnerSource: execution.runner === null ? null : runners.has(execution.runner) ? 'file' : 'team',
      secrets,
      mcpServers: { ...factory.mcpServers, ...execution.mcpServers },
    };
  }

  // ---------------------------------------------------------------- runners

  private checkRunner(checked: Checked): RunnerDefinition | undefined {
    const { source, value: v } = checked;
    if (!v) return undefined;
    let ok = true;
    const error = (
      pointer: string,
      message: string,
      code: DiagnosticCode = 'FF_INVALID_VALUE',
      target?: PositionTarget,
    ): void => {
      this.report(source, code, pointer, message, target ? { target } : {});
      ok = false;
    };
    const platform = (v.platform ?? {}) as Json;
    const os = (platform.os ?? 'linux') as 'linux' | 'macos';
    const linux = platform.linux as Json | undefined;
    const mac = platform.mac as Json | undefined;
    const shape = v.instanceShape as { vcpus: number; memoryGb: number } | undefined;
    if (os === 'linux') {
      if (!linux) {
        error(
          v.platform ? '/platform/linux' : '/platform',
          'a Linux runner needs `platform.linux.dockerImage`',
          'FF_MISSING_REQUIRED',
        );
      }
      if (mac) error('/platform/mac', '`platform.mac` is only valid with `os: macos`', 'FF_INVALID_VALUE', 'key');
      if (shape) {
        const pow2 = (n: number): boolean => n > 0 && (n & (n - 1)) === 0;
        if (!pow2(shape.vcpus) || shape.vcpus > LINUX_MAX_VCPUS)
          error('/instanceShape/vcpus', `Linux \`vcpus\` must be a power of two up to ${LINUX_MAX_VCPUS}`);
        if (!pow2(shape.memoryGb) || shape.memoryGb > LINUX_MAX_MEMORY_GB)
          error('/instanceShape/memoryGb', `Linux \`memoryGb\` must be a power of two up to ${LINUX_MAX_MEMORY_GB}`);
      }
    } else {
      if (linux) error('/platform/linux', '`platform.linux` is only valid with `os: linux`', 'FF_INVALID_VALUE', 'key');
      if (platform.arch !== undefined && platform.arch !== 'aarch64')
        error('/platform/arch', 'macOS runners are `aarch64` only');
      if (shape && !MACOS_SHAPES.has(`${shape.vcpus}/${shape.memoryGb}`)) {
        error(
          '/instanceShape',
          `macOS shapes are ${[...MACOS_SHAPES].map((s) => `${s.replace('/', ' vCPU/')} GB`).join(', ')}`,
        );
      }
    }
    const network = v.network as RunnerDefinition['network'] | undefined;
    if (network && typeof network === 'object') {
      network.allow.forEach((host, i) => {
        const problem = allowEntryProblem(host);
        if (problem) error(`/network/allow/${i}`, `network.allow: ${problem}`);
      });
    }
    if (!ok) return undefined;
    if (shape) this.note(source, 'runnerInstanceShape', '/instanceShape');
    if (Array.isArray(v.setupCommands) && v.setupCommands.length > 0)
      this.note(source, 'runnerSetupCommands', '/setupCommands');
    if (os === 'macos') this.note(source, 'macosRunner', '/platform/os');
    return {
      name: checked.file.name,
      file: checked.file.path,
      description: str(v.description),
      setupCommands: [...((v.setupCommands as string[] | undefined) ?? [])],
      instanceShape: shape ? { vcpus: shape.vcpus, memoryGb: shape.memoryGb } : null,
      platform: {
        os,
        arch: (platform.arch ?? (os === 'macos' ? 'aarch64' : 'x86_64')) as 'x86_64' | 'aarch64',
        dockerImage: linux ? (linux.dockerImage as string) : null,
        macVersion: os === 'macos' ? (str(mac?.version) ?? '26') : null,
      },
      ...(v['x-agentyard-limits'] ? { limits: { ...(v['x-agentyard-limits'] as RunnerLimits) } } : {}),
      ...(network === 'none' ? { network } : network ? { network: { allow: [...network.allow] } } : {}),
    };
  }

  private async checkRunnerRefs(runnerNames: ReadonlySet<string>): Promise<void> {
    for (const ref of this.runnerRefs) {
      if (runnerNames.has(ref.name)) continue;
      const exists = this.context?.teamRunnerExists;
      if (!exists) {
        this.skipped('team_runner', ref.source, ref.pointer, ref.name);
      } else if (!exists(ref.name)) {
        this.report(
          ref.source,
          'FF_INVALID_REFERENCE',
          ref.pointer,
          `no runner named \`${ref.name}\`: neither runners/${ref.name}.yaml nor a team runner${didYouMean(ref.name, runnerNames)}`,
        );
      }
    }
  }

  private async checkSecretRefs(): Promise<void> {
    const exists = this.context?.secretExists;
    const cache = new Map<string, Promise<boolean>>();
    for (const ref of this.secretRefs) {
      if (!exists) {
        this.skipped('secret_exists', ref.source, ref.pointer, ref.name);
        continue;
      }
      let found = cache.get(ref.name);
      if (!found) {
        found = Promise.resolve(exists(ref.name));
        cache.set(ref.name, found);
      }
      if (!(await found))
        this.report(ref.source, 'FF_INVALID_REFERENCE', ref.pointer, `no managed secret named \`${ref.name}\``);
    }
    const urlSafe = this.context?.secretIsUrlSafe;
    for (const ref of this.urlSafeRefs) {
      if (!urlSafe) {
        this.skipped('secret_url_safe', ref.source, '/secretName', ref.name);
      } else if (exists && !(await cache.get(ref.name))) {
      } else if (!(await urlSafe(ref.name))) {
        this.report(
          ref.source,
          'FF_INVALID_VALUE',
          '/secretName',
          `secret \`${ref.name}\` is not URL-safe; a \`url_token\` secret may hold only A-Z a-z 0-9 - . _ ~`,
        );
      }
    }
  }

  /** Declared integrations must be connected; name aliases resolve to IDs (the triggers then hold the IDs). */
  private async checkIntegrationRefs(): Promise<void> {
    const connected = this.context?.integrationConnected;
    for (const ref of this.integrationRefs) {
      if (!connected) this.skipped('integration_connected', ref.source, ref.pointer, ref.type);
      else if (!(await connected(ref.type)))
        this.report(
          ref.source,
          'FF_INVALID_REFERENCE',
          ref.pointer,
          `the team has not connected ${ref.type}; connect it with PUT /api/v1/integrations/${ref.type}`,
        );
    }
    const resolve = this.context?.resolveNames;
    if (!resolve) return;
    for (const ref of this.aliasRefs) {
      const names = (ref.matcher.in ?? []).map(String);
      let ids: Map<string, string[]>;
      try {
        ids = await resolve(ref.provider, ref.field, names);
      } catch (err) {
        this.report(
          ref.source,
          'FF_INVALID_REFERENCE',
          ref.pointer,
          `cannot resolve \`${ref.field}\` through ${ref.provider}: ${(err as Error).message}`,
        );
        continue;
      }
      let ok = true;
      names.forEach((name, i) => {
        if (ids.has(name)) return;
        ok = false;
        this.report(
          ref.source,
          'FF_INVALID_REFERENCE',
          `${ref.pointer}/${i}`,
          `${ref.provider} knows no ${ref.field} entry named \`${name}\``,
        );
      });
      if (ok) {
        ref.matcher.in = [...new Set(names.flatMap((name) => ids.get(name)!))];
        const at = this.deferred.findIndex((d) => d.file === ref.source.file && d.path === ref.pointer);
        if (at !== -1) this.deferred.splice(at, 1);
      }
    }
  }

  // ---------------------------------------------------------------- scorers

  private checkScorer(checked: Checked, agentNames: ReadonlySet<string>): ScorerDefinition | undefined {
    const { source, value: v } = checked;
    if (!v) return undefined;
    let ok = true;
    const error = (code: DiagnosticCode, pointer: string, message: string, options?: ReportOptions): void => {
      this.report(source, code, pointer, message, options);
      ok = false;
    };
    const agents = v.agents as string[];
    agents.forEach((name, i) => {
      if (!agentNames.has(name))
        error('FF_INVALID_REFERENCE', `/agents/${i}`, `no agent named \`${name}\`${didYouMean(name, agentNames)}`);
    });
    if (typeof v.model === 'string') this.checkModel(source, '/model', v.model);
    this.note(source, 'scorers', '', { line: 1, column: 1 });
    const labels = v.labels as { value: string; score: number; description?: string }[];
    const values = new Set<string>();
    labels.forEach((label, i) => {
      if (values.has(label.value))
        error('FF_DUPLICATE_KEY', `/labels/${i}/value`, `label \`${label.value}\` is declared twice`);
      values.add(label.value);
    });
    const passing = v.passingScore as number;
    if (!labels.some((l) => l.score >= passing) || !labels.some((l) => l.score < passing)) {
      error(
        'FF_INVALID_VALUE',
        '/passingScore',
        '`passingScore` must have at least one label scoring at or above it and at least one below',
      );
    }
    const rubric = prompt(source);
    if (!rubric) {
      error('FF_MISSING_REQUIRED', '', 'the body (the scoring rubric) is required and is empty', {
        position: { line: source.bodyLine ?? 1, column: 1 },
      });
    }
    if (!ok) return undefined;
    return {
      name: checked.file.name,
      file: checked.file.path,
      displayName: str(v.name),
      description: str(v.description),
      agents: [...agents],
      labels: labels.map((l) => ({ value: l.value, score: l.score, description: l.description ?? null })),
      passingScore: passing,
      model: v.model as string,
      samplingRate: (v.samplingRate as number | undefined) ?? 25,
      enabled: v.enabled !== false,
      output: 'classification',
      selfImprovement: v.selfImprovement === true,
      rubric,
    };
  }

  // ---------------------------------------------------------------- webhooks

  private checkWebhooks(files: Checked[]): WebhookDefinition[] {
    const out: WebhookDefinition[] = [];
    files.forEach((checked, index) => {
      const { source, value: v } = checked;
      if (index >= MAX_WEBHOOKS_PER_FACTORY) {
        this.report(
          source,
          'FF_LIMIT_EXCEEDED',
          '',
          `a factory may declare at most ${MAX_WEBHOOKS_PER_FACTORY} webhooks; this is number ${index + 1}`,
          {
            position: { line: 1, column: 1 },
          },
        );
        return;
      }
      if (!v) return;
      let ok = true;
      const authMode = (v.authMode ?? 'token') as WebhookAuthMode;
      const scheme = str(v.signatureScheme);
      if (authMode === 'signature' && scheme === null) {
        this.report(source, 'FF_MISSING_REQUIRED', '/signatureScheme', '`authMode: signature` needs `signatureScheme`');
        ok = false;
      }
      if (authMode !== 'signature' && scheme !== null) {
        this.report(
          source,
          'FF_INVALID_VALUE',
          '/signatureScheme',
          `\`signatureScheme\` is only valid with \`authMode: signature\` (this webhook uses \`${authMode}\`)`,
          { target: 'key' },
        );
        ok = false;
      }
      const header = str(v.deliveryIdHeader);
      if (header !== null && CREDENTIAL_HEADERS.has(header.toLowerCase())) {
        this.report(
          source,
          'FF_INVALID_VALUE',
          '/deliveryIdHeader',
          `\`${header}\` carries credentials or a signature and cannot be the delivery ID header`,
        );
        ok = false;
      }
      const secretName = v.secretName as string;
      this.secretRefs.push({ name: secretName, source, pointer: '/secretName' });
      if (authMode === 'url_token') this.urlSafeRefs.push({ name: secretName, source });
      if (!ok) return;
      out.push({
        name: checked.file.name,
        file: checked.file.path,
        authMode,
        signatureScheme: scheme,
        secretName,
        deliveryIdHeader: header,
        enabled: v.enabled !== false,
      });
    });
    return out;
  }

  // ---------------------------------------------------------------- benchmarks

  private checkBenchmarks(
    suites: Checked[],
    tasks: Checked[],
    agentNames: ReadonlySet<string>,
  ): BenchmarkSuiteDefinition[] {
    const out: BenchmarkSuiteDefinition[] = [];
    const suiteSlugs = new Set(suites.map((s) => s.file.name));
    for (const task of tasks) {
      if (!suiteSlugs.has(task.file.owner!)) {
        this.report(
          task.source,
          'FF_INVALID_REFERENCE',
          '',
          `task of suite \`${task.file.owner}\`, which has no benchmarks/${task.file.owner}/suite.yaml`,
          { position: { line: 1, column: 1 } },
        );
      }
    }
    const names = new Map<string, string>();
    for (const suite of suites) {
      const { source, value: v } = suite;
      if (!v) continue;
      let ok = true;
      const name = v.name as string;
      const other = names.get(name);
      if (other !== undefined) {
        this.report(source, 'FF_DUPLICATE_KEY', '/name', `suite name \`${name}\` is also used by ${other}`);
        ok = false;
      }
      names.set(name, suite.file.path);
      const agent = v.agent as string;
      if (!agentNames.has(agent)) {
        this.report(
          source,
          'FF_INVALID_REFERENCE',
          '/agent',
          `no agent named \`${agent}\`${didYouMean(agent, agentNames)}`,
        );
        ok = false;
      }
      const own = new Map(tasks.filter((t) => t.file.owner === suite.file.name).map((t) => [t.file.name, t]));
      const listed = (v.tasks as string[] | undefined) ?? [];
      listed.forEach((slug, i) => {
        if (!own.has(slug)) {
          this.report(
            source,
            'FF_INVALID_REFERENCE',
            `/tasks/${i}`,
            `no task file benchmarks/${suite.file.name}/tasks/${slug}.yaml`,
          );
          ok = false;
        }
      });
      for (const [slug, task] of own) {
        if (!listed.includes(slug)) {
          this.report(
            task.source,
            'FF_INVALID_REFERENCE',
            '',
            `task \`${slug}\` is not listed in \`tasks\` of benchmarks/${suite.file.name}/suite.yaml`,
            { position: { line: 1, column: 1 } },
          );
          ok = false;
        }
      }
      if (!ok || [...own.values()].some((t) => !t.value)) continue;
      out.push({
        slug: suite.file.name,
        file: suite.file.path,
        name,
        description: str(v.description),
        agent,
        tasks: listed.map((slug) => {
          const t = own.get(slug)!;
          const tv = t.value!;
          return {
            slug,
            file: t.file.path,
            title: tv.title as string,
            prompt: tv.prompt as string,
            successCriteria: tv.successCriteria as string,
            sourceRunId: str(tv.sourceRunId),
            startingRepoRefs: [...((tv.startingRepoRefs as string[] | undefined) ?? [])],
          };
        }),
      });
    }
    return out;
  }
}

function skillOf(file: ClassifiedFile): SkillFile {
  return { name: file.name, path: file.path, content: file.content };
}
