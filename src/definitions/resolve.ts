import type {
  ExecutionOverrides,
  HarnessAuth,
  HarnessType,
  McpServerRef,
  ResolvedExecution,
  ResolvedHarness,
  RunBudget,
} from './model.ts';
import { DAILY_CAP_KEYS, RUN_BUDGET_KEYS } from './model.ts';

/** Where a resolved value was declared, so that a problem found after resolution points at the right key. */
export interface Origin {
  file: string;
  pointer: string;
}

export interface ExecutionLevel {
  declared: ExecutionOverrides;
  file: string;
  /** Pointer of the mapping holding the keys (`/agentDefaults` in factory.yaml, `` in frontmatter). */
  base: string;
  /** An automation's level: the daily caps inherited so far are not its own and are dropped. */
  ownDailyCaps?: boolean;
}

export interface ResolutionProblem {
  origin: Origin;
  message: string;
}

export interface Resolution {
  /** Harness may be incomplete (model '') when `problems` is not empty. */
  execution: Omit<ResolvedExecution, 'runnerSource' | 'secrets' | 'mcpServers'> & {
    secrets: string[];
    mcpServers: Record<string, McpServerRef>;
  };
  origins: { harness?: Origin; auth?: Origin; runner?: Origin; workerHost?: Origin; environmentId?: Origin };
  problems: ResolutionProblem[];
}

export function normalizeHarnessType(type: string): HarnessType {
  return type === 'claude-code' ? 'claude' : (type as HarnessType);
}

function has<T extends object>(value: T, key: string): boolean {
  return Object.hasOwn(value, key);
}

/**
 * Resolves execution settings through agentDefaults → agent → automation (§3 of the format):
 * - `model: X` at any level is `harness: {type: oz, model: X}` and resets reasoningLevel and auth;
 * - a harness block changes only the keys it declares; changing `type` drops the inherited model,
 *   reasoningLevel and auth (a harness-native model of one harness means nothing to another);
 * - `model`, `harness.type`, `harness.model`, `runner`, `environmentId`: omitted or null = inherit;
 * - `workerHost`, `harness.reasoningLevel`, `harness.auth`: omitted = inherit, null or "" = clear;
 * - `secrets` and `mcpServers` replace the inherited value (factory-level ones are added by the caller).
 */
export function resolveExecution(levels: readonly ExecutionLevel[]): Resolution {
  const problems: ResolutionProblem[] = [];
  const origins: Resolution['origins'] = {};
  let harness: ResolvedHarness = { type: 'oz', model: '', reasoningLevel: null, auth: null };
  let runner: string | null = null;
  let environmentId: string | null = null;
  let workerHost: string | null = null;
  let secrets: string[] = [];
  let mcpServers: Record<string, McpServerRef> = {};
  const budget: RunBudget = {};

  for (const level of levels) {
    const d = level.declared;
    const at = (key: string): Origin => ({ file: level.file, pointer: `${level.base}/${key}` });
    if (typeof d.model === 'string') {
      harness = { type: 'oz', model: d.model, reasoningLevel: null, auth: null };
      origins.harness = at('model');
      delete origins.auth;
    } else if (d.harness) {
      const h = d.harness;
      const type = typeof h.type === 'string' ? normalizeHarnessType(h.type) : harness.type;
      const typeChanged = type !== harness.type || harness.model === '';
      const base: ResolvedHarness = typeChanged ? { type, model: '', reasoningLevel: null, auth: null } : harness;
      const model = typeof h.model === 'string' ? h.model : base.model;
      if (!model) {
        problems.push({
          origin: at('harness'),
          message:
            typeChanged && harness.model
              ? `harness type changes to \`${type}\`, so \`harness.model\` must be set too (the inherited model belongs to \`${harness.type}\`)`
              : '`harness.model` is required: no model is inherited',
        });
      }
      const reasoningLevel = has(h, 'reasoningLevel') ? h.reasoningLevel || null : base.reasoningLevel;
      const auth: HarnessAuth | null = has(h, 'auth') ? (h.auth ?? null) : base.auth;
      if (has(h, 'auth')) origins.auth = at('harness/auth');
      else if (typeChanged) delete origins.auth;
      const baseUrl = has(h, 'baseUrl') ? h.baseUrl || undefined : base.baseUrl;
      harness = { type, model, reasoningLevel, auth, ...(baseUrl ? { baseUrl } : {}) };
      origins.harness = at('harness');
    }
    if (typeof d.runner === 'string') {
      runner = d.runner;
      origins.runner = at('runner');
    }
    if (typeof d.environmentId === 'string') {
      environmentId = d.environmentId;
      origins.environmentId = at('environmentId');
    }
    if (has(d, 'workerHost')) {
      workerHost = d.workerHost || null;
      origins.workerHost = at('workerHost');
    }
    // an automation's daily caps are its own: its agent's count the agent's runs, not the automation's
    if (level.ownDailyCaps) for (const key of DAILY_CAP_KEYS) delete budget[key];
    if (d.budget) {
      for (const key of RUN_BUDGET_KEYS) {
        if (!has(d.budget, key)) continue;
        const value = d.budget[key];
        if (typeof value === 'number') budget[key] = value;
        else delete budget[key];
      }
    }
    if (d.secrets !== undefined) secrets = [...d.secrets];
    if (d.mcpServers !== undefined) mcpServers = { ...d.mcpServers };
  }
  return {
    execution: {
      harness,
      runner,
      environmentId,
      workerHost,
      secrets,
      mcpServers,
      ...(Object.keys(budget).length ? { budget } : {}),
    },
    origins,
    problems,
  };
}

/** Is `workerHost` a self-hosted worker ID (not the workspace default, not service-hosted)? */
export function isSelfHostedWorker(workerHost: string | null): boolean {
  return workerHost !== null && workerHost !== 'warp' && workerHost !== 'service';
}
