import { closest } from '../definitions/levenshtein.ts';
import { AppError } from '../kernel/errors.ts';

export type ModelProvider = 'OPENAI' | 'ANTHROPIC' | 'GOOGLE' | 'UNKNOWN';

export interface ModelInfo {
  id: string;
  display_name: string;
  provider: ModelProvider;
  vision_supported: boolean;
  description?: string;
  reasoning_level?: string;
}

export interface ModelCatalogue {
  default_model_id: string;
  models: ModelInfo[];
}

const model = (id: string, display_name: string, provider: ModelProvider, description?: string): ModelInfo => ({
  id,
  display_name,
  provider,
  vision_supported: true,
  ...(description ? { description } : {}),
});

/**
 * The models this deployment knows without configuration: the product's published ids (its Auto models and
 * model ids, which factories written for it name) and the names the harnesses' CLIs take for `--model`.
 * `auto` and `auto-*` leave the choice to the harness (docs/harnesses.md).
 */
export const BUILT_IN_MODELS: readonly ModelInfo[] = [
  model('auto', 'Auto (the harness default)', 'UNKNOWN', 'The harness picks its default model'),
  model('auto-efficient', 'Auto (Cost-efficient)', 'UNKNOWN', 'The harness picks its default model'),
  model('auto-genius', 'Auto (Genius)', 'UNKNOWN', 'The harness picks its default model'),
  model('auto-open', 'Auto (Open-weights)', 'UNKNOWN', 'The harness picks its default model'),
  // Claude Code (`claude --model`): aliases and full names
  model('opus', 'Claude Opus (latest)', 'ANTHROPIC'),
  model('sonnet', 'Claude Sonnet (latest)', 'ANTHROPIC'),
  model('haiku', 'Claude Haiku (latest)', 'ANTHROPIC'),
  model('claude-opus-4-6', 'Claude Opus 4.6', 'ANTHROPIC'),
  model('claude-opus-4-5', 'Claude Opus 4.5', 'ANTHROPIC'),
  model('claude-opus-4-1', 'Claude Opus 4.1', 'ANTHROPIC'),
  model('claude-sonnet-4-5', 'Claude Sonnet 4.5', 'ANTHROPIC'),
  model('claude-sonnet-4', 'Claude Sonnet 4', 'ANTHROPIC'),
  model('claude-haiku-4-5', 'Claude Haiku 4.5', 'ANTHROPIC'),
  // Codex (`codex --model`) and the product's OpenAI ids
  model('gpt-5', 'GPT-5', 'OPENAI'),
  model('gpt-5-codex', 'GPT-5 Codex', 'OPENAI'),
  model('gpt-5.1', 'GPT-5.1', 'OPENAI'),
  model('gpt-5.1-codex', 'GPT-5.1 Codex', 'OPENAI'),
  model('gpt-5.1-codex-max', 'GPT-5.1 Codex Max', 'OPENAI'),
  model('gpt-5.2', 'GPT-5.2', 'OPENAI'),
  model('gpt-5.2-codex', 'GPT-5.2 Codex', 'OPENAI'),
  model('gpt-5.3-codex', 'GPT-5.3 Codex', 'OPENAI'),
  model('gpt-5.4', 'GPT-5.4', 'OPENAI'),
  ...['low', 'medium', 'high', 'xhigh'].map((level) =>
    model(`gpt-5-4-${level}`, `GPT-5.4 (${level} reasoning)`, 'OPENAI'),
  ),
  ...['low', 'medium', 'high', 'xhigh'].map((level) =>
    model(`gpt-5-3-codex-${level}`, `GPT-5.3 Codex (${level} reasoning)`, 'OPENAI'),
  ),
  // Gemini CLI (`gemini --model`)
  model('gemini-3-pro', 'Gemini 3 Pro', 'GOOGLE'),
  model('gemini-3-pro-preview', 'Gemini 3 Pro (preview)', 'GOOGLE'),
  model('gemini-2.5-pro', 'Gemini 2.5 Pro', 'GOOGLE'),
  model('gemini-2.5-flash', 'Gemini 2.5 Flash', 'GOOGLE'),
];

/** What `GET /agent/models` answers when AGENTYARD_MODELS is not set. */
export const DEFAULT_MODELS: ModelCatalogue = { default_model_id: 'auto', models: [...BUILT_IN_MODELS] };

export function providerOf(id: string): ModelProvider {
  if (/^claude|anthropic/i.test(id)) return 'ANTHROPIC';
  if (/^(gpt|o\d|openai|codex)/i.test(id)) return 'OPENAI';
  if (/^gemini|google/i.test(id)) return 'GOOGLE';
  return 'UNKNOWN';
}

function fromIds(ids: string[]): ModelCatalogue {
  return {
    default_model_id: ids[0]!,
    models: ids.map((id) => ({ id, display_name: id, provider: providerOf(id), vision_supported: true })),
  };
}

function checkModel(value: unknown, index: number): ModelInfo {
  const m = value as Partial<ModelInfo> | null;
  if (!m || typeof m !== 'object' || typeof m.id !== 'string' || m.id === '') {
    throw new Error(`AGENTYARD_MODELS: models[${index}].id must be a non-empty string`);
  }
  return {
    ...m,
    id: m.id,
    display_name: typeof m.display_name === 'string' ? m.display_name : m.id,
    provider:
      m.provider && ['OPENAI', 'ANTHROPIC', 'GOOGLE', 'UNKNOWN'].includes(m.provider) ? m.provider : providerOf(m.id),
    vision_supported: typeof m.vision_supported === 'boolean' ? m.vision_supported : true,
  };
}

/**
 * AGENTYARD_MODELS is either a comma-separated list of model ids (the first is the default) or JSON: an
 * array of ids or ModelInfo objects, or `{default_model_id, models}`.
 */
export function parseModelCatalogue(raw: string | undefined): ModelCatalogue {
  if (raw === undefined || raw.trim() === '') return DEFAULT_MODELS;
  const text = raw.trim();
  if (!text.startsWith('[') && !text.startsWith('{')) {
    const ids = text
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    if (ids.length === 0) return DEFAULT_MODELS;
    return fromIds(ids);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new Error(`AGENTYARD_MODELS is not valid JSON: ${(err as Error).message}`);
  }
  const list = Array.isArray(parsed) ? parsed : (parsed as { models?: unknown }).models;
  if (!Array.isArray(list) || list.length === 0) throw new Error('AGENTYARD_MODELS must list at least one model');
  const models = list.map((item, i) => (typeof item === 'string' ? fromIds([item]).models[0]! : checkModel(item, i)));
  const configuredDefault = Array.isArray(parsed)
    ? undefined
    : (parsed as { default_model_id?: unknown }).default_model_id;
  const defaultId = typeof configuredDefault === 'string' ? configuredDefault : models[0]!.id;
  if (!models.some((m) => m.id === defaultId))
    throw new Error(`AGENTYARD_MODELS: default_model_id "${defaultId}" is not in models`);
  return { default_model_id: defaultId, models };
}

/** The catalogue runs and factories are checked against: the configured models first, then the built-in ones. */
export interface KnownModels extends ModelCatalogue {
  /** Unknown ids are refused (AGENTYARD_MODEL_CATALOGUE=closed) rather than warned about. */
  closed: boolean;
  ids: ReadonlySet<string>;
  /** What `unknownModel` answered for ids seen lately: the nearest-id search is the cost of a run's creation. */
  readonly verdicts: Map<string, string | undefined>;
}

/** How many ids' verdicts are kept; past it the memo starts again (a sender of random ids gains nothing). */
const MAX_VERDICTS = 1024;

export function knownModels(config: {
  agentModels: string | undefined;
  modelCatalogue: 'open' | 'closed';
  builtinModels?: readonly string[] | undefined;
}): KnownModels {
  const configured = parseModelCatalogue(config.agentModels);
  const models = [...configured.models];
  const seen = new Set(models.map((m) => m.id));
  for (const id of config.builtinModels ?? []) {
    if (seen.has(id)) continue;
    seen.add(id);
    models.push({
      id,
      display_name: id,
      provider: providerOf(id),
      vision_supported: false,
      description: "A model of this instance's OpenAI-compatible endpoint (harness agentyard)",
    });
  }
  for (const m of BUILT_IN_MODELS) if (!seen.has(m.id)) models.push(m);
  return {
    default_model_id: configured.default_model_id,
    models,
    closed: config.modelCatalogue === 'closed',
    ids: new Set(models.map((m) => m.id)),
    verdicts: new Map(),
  };
}

/** Why `id` (named by `field`) is not catalogued, with the nearest known id; undefined when it is. */
export function unknownModel(known: KnownModels, field: string, id: string): string | undefined {
  if (known.ids.has(id)) return undefined;
  const key = `${field}\u0000${id}`;
  if (known.verdicts.has(key)) return known.verdicts.get(key);
  const suggestion = closest(id, known.ids);
  const message = `${field} "${id}" is not in this deployment's model catalogue (GET /agent/models)${
    suggestion ? `; did you mean "${suggestion}"?` : ''
  }`;
  if (known.verdicts.size >= MAX_VERDICTS) known.verdicts.clear();
  known.verdicts.set(key, message);
  return message;
}

export interface RunWarning {
  code: 'model_unknown';
  field: string;
  message: string;
}

/**
 * The model ids a run's configuration names that the catalogue does not know: warnings, or with a closed
 * catalogue a `422 model_unknown`.
 */
export function checkRunModels(
  known: KnownModels,
  config: { model_id?: unknown; harness?: { model_id?: unknown } } | undefined,
): RunWarning[] {
  const named: [string, unknown][] = [
    ['config.model_id', config?.model_id],
    ['config.harness.model_id', config?.harness?.model_id],
  ];
  const warnings: RunWarning[] = [];
  for (const [field, id] of named) {
    if (typeof id !== 'string' || id === '') continue;
    const message = unknownModel(known, field, id);
    if (!message) continue;
    if (known.closed) throw new AppError('model_unknown', message);
    warnings.push({ code: 'model_unknown', field, message: `${message}; the harness is given it as it is` });
  }
  return warnings;
}
