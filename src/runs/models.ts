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

/**
 * What `GET /agent/models` answers when AGENTYARD_MODELS is not set. The model is chosen by the harness that
 * runs the agent; `auto` leaves the choice to it. Operators list the models their harnesses accept.
 */
export const DEFAULT_MODELS: ModelCatalogue = {
  default_model_id: 'auto',
  models: [
    { id: 'auto', display_name: 'Auto (the harness default)', provider: 'UNKNOWN', vision_supported: true },
    { id: 'claude-sonnet-4-5', display_name: 'Claude Sonnet 4.5', provider: 'ANTHROPIC', vision_supported: true },
    { id: 'claude-opus-4-1', display_name: 'Claude Opus 4.1', provider: 'ANTHROPIC', vision_supported: true },
    { id: 'gpt-5', display_name: 'GPT-5', provider: 'OPENAI', vision_supported: true },
    { id: 'gemini-2.5-pro', display_name: 'Gemini 2.5 Pro', provider: 'GOOGLE', vision_supported: true },
  ],
};

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
