/**
 * Automations of managed factories through the API: each is the file `automations/<name>/automation.md`
 * (YAML frontmatter, then the prompt), and every write is a change of that file, committed and applied.
 */
import type { Caller } from '../identity/principal.ts';
import { parseDocument, stringify } from 'yaml';
import { RESOURCE_NAME } from '../definitions/load.ts';
import type { ManagedFactoryContext } from '../factories/managed-change.ts';
import { AppError } from '../kernel/errors.ts';
import { changeManagedFactory, fileAt, replaceFile, teamFactory } from '../factories/managed-change.ts';
import { getAutomation } from './views.ts';
import type { AutomationRecord } from './views.ts';

/** The execution keys an automation file may declare (they override the agent's and the factory defaults). */
export const AUTOMATION_SETTING_KEYS = [
  'model',
  'harness',
  'runner',
  'environmentId',
  'secrets',
  'mcpServers',
  'workerHost',
] as const;
export type AutomationSettings = Partial<Record<(typeof AUTOMATION_SETTING_KEYS)[number], unknown>>;

export interface CreateAutomationInput {
  name: string;
  prompt: string;
  enabled?: boolean | undefined;
  agent?: string | undefined;
  triggers: Record<string, unknown>[];
  settings?: AutomationSettings | undefined;
}

export interface PatchAutomationInput {
  name?: string | undefined;
  prompt?: string | undefined;
  enabled?: boolean | undefined;
  agent?: string | null | undefined;
  triggers?: Record<string, unknown>[] | undefined;
  /** A key set to null is removed (inherited again). */
  settings?: Partial<Record<(typeof AUTOMATION_SETTING_KEYS)[number], unknown>> | undefined;
}

/** `---\n<yaml>---\n<body>` → its two parts; undefined when the file does not open with a frontmatter fence. */
export function splitFrontmatter(text: string): { frontmatter: string; body: string } | undefined {
  const match = /^\uFEFF?---[ \t]*\r?\n([\s\S]*?)^---[ \t]*(?:\r?\n|$)([\s\S]*)$/m.exec(text);
  if (!match) return undefined;
  return { frontmatter: match[1]!, body: match[2]! };
}

function joinFrontmatter(frontmatter: string, prompt: string): string {
  return `---\n${frontmatter.endsWith('\n') || frontmatter === '' ? frontmatter : `${frontmatter}\n`}---\n\n${prompt.trim()}\n`;
}

function automationFile(input: CreateAutomationInput): string {
  const frontmatter = {
    enabled: input.enabled ?? true,
    ...(input.agent ? { agent: input.agent } : {}),
    ...Object.fromEntries(
      AUTOMATION_SETTING_KEYS.filter((k) => input.settings?.[k] !== undefined).map((k) => [k, input.settings![k]]),
    ),
    triggers: input.triggers,
  };
  return joinFrontmatter(stringify(frontmatter), input.prompt);
}

/** The files that make up an automation: its directory, or the legacy flat file. */
function automationPaths(name: string): (path: string) => boolean {
  return (path) => path.startsWith(`automations/${name}/`) || path === `automations/${name}.md`;
}

export class AutomationManagement {
  readonly #ctx: ManagedFactoryContext;

  constructor(ctx: ManagedFactoryContext) {
    this.#ctx = ctx;
  }

  async #live(teamId: string, id: string): Promise<AutomationRecord> {
    const row = await getAutomation(this.#ctx.db, teamId, id);
    if (!row) throw new AppError('resource_not_found', `automation ${id} does not exist`);
    return row;
  }

  async create(request: Caller, factoryId: string, input: CreateAutomationInput): Promise<AutomationRecord> {
    const { teamId } = request.principal;
    const factory = await teamFactory(this.#ctx, teamId, factoryId);
    if (!RESOURCE_NAME.test(input.name)) {
      throw new AppError(
        'invalid_request',
        `name "${input.name}" must be 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit`,
      );
    }
    if (!input.prompt.trim())
      throw new AppError('invalid_request', 'prompt must not be empty: it is what every run starts with');
    await changeManagedFactory(this.#ctx, factory, request, `Create automation ${input.name}`, (files) => {
      if (files.some((f) => automationPaths(input.name)(f.path))) {
        throw new AppError(
          'automation_name_taken',
          `factory ${factory.name} already has an automation named "${input.name}"`,
        );
      }
      return [...files, { path: `automations/${input.name}/automation.md`, content: automationFile(input) }];
    });
    const res = await this.#ctx.db.query<{ id: string }>(
      'SELECT id FROM automations WHERE factory_id = $1 AND name = $2 AND deleted_at IS NULL',
      [factory.id, input.name],
    );
    const id = res.rows[0]?.id;
    if (!id) throw new AppError('internal_error', `automation ${input.name} was applied but is not live`);
    return this.#live(teamId, id);
  }

  async patch(request: Caller, id: string, input: PatchAutomationInput): Promise<AutomationRecord> {
    const { teamId } = request.principal;
    const row = await this.#live(teamId, id);
    if (input.name !== undefined && input.name !== row.name) {
      throw new AppError(
        'invalid_request',
        `name: automation ${row.name} cannot be renamed; create a new automation and delete this one`,
      );
    }
    if (input.prompt !== undefined && !input.prompt.trim())
      throw new AppError('invalid_request', 'prompt must not be empty: it is what every run starts with');
    const factory = await teamFactory(this.#ctx, teamId, row.factory_id);
    const what = input.enabled === undefined ? 'Update' : input.enabled ? 'Enable' : 'Disable';
    await changeManagedFactory(this.#ctx, factory, request, `${what} automation ${row.name}`, (files) => {
      const file = fileAt(files, row.file);
      const parts = file ? splitFrontmatter(file.content) : undefined;
      if (!file || !parts)
        throw new AppError('resource_not_found', `automation ${id} has no readable file ${row.file} any more`);
      const doc = parseDocument(parts.frontmatter);
      if (input.enabled !== undefined) doc.set('enabled', input.enabled);
      if (input.agent === null) doc.delete('agent');
      else if (input.agent !== undefined) doc.set('agent', input.agent);
      for (const key of AUTOMATION_SETTING_KEYS) {
        const value = input.settings?.[key];
        if (value === null) doc.delete(key);
        else if (value !== undefined) doc.set(key, doc.createNode(value));
      }
      if (input.triggers !== undefined) doc.set('triggers', doc.createNode(input.triggers));
      return replaceFile(files, row.file, joinFrontmatter(String(doc), input.prompt ?? parts.body));
    });
    return this.#live(teamId, id);
  }

  async delete(request: Caller, id: string): Promise<void> {
    const { teamId } = request.principal;
    const row = await this.#live(teamId, id);
    const factory = await teamFactory(this.#ctx, teamId, row.factory_id);
    await changeManagedFactory(this.#ctx, factory, request, `Delete automation ${row.name}`, (files) => {
      const belongs = automationPaths(row.name);
      if (!files.some((f) => belongs(f.path)))
        throw new AppError('resource_not_found', `automation ${id} has no file ${row.file} any more`);
      return files.filter((f) => !belongs(f.path));
    });
  }
}
