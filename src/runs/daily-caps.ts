/**
 * Daily caps (docs/governance.md, "Daily caps"): the most runs, and the most reported cost, per UTC day of a
 * factory (factory.yaml `budget`), of one of its agents and of one of its automations (their `budget.dailyRuns`,
 * `budget.dailyCostUsd`). Checked when a run of the factory is created; a creation past a cap is refused with
 * `daily_cap_reached` (429, Retry-After: the next UTC day), and an automation's firing records the refusal as
 * skipped. Creations of runs under caps are serialised by an advisory lock, so a burst cannot pass a cap.
 */
import { AppError } from '../kernel/errors.ts';
import type { Queryable } from '../kernel/db.ts';
import { dailyCapsOf, dailyUsageOf, lockDailyCaps } from './sql.ts';
import type { DailyCapsRow, DailyUsageRow } from './sql.ts';

type Scope = 'factory' | 'agent' | 'automation';

interface Cap {
  scope: Scope;
  key: 'dailyRuns' | 'dailyCostUsd';
  limit: number;
}

/** The caps that apply to a run, in the order they are reported: factory, agent, automation. */
export interface RunCaps {
  factoryId: string;
  automationId: string | null;
  row: DailyCapsRow;
  caps: Cap[];
}

function capsIn(scope: Scope, value: Record<string, unknown> | null): Cap[] {
  if (!value || typeof value !== 'object') return [];
  const caps: Cap[] = [];
  for (const key of ['dailyRuns', 'dailyCostUsd'] as const) {
    const limit = value[key];
    if (typeof limit === 'number' && Number.isFinite(limit) && limit > 0) caps.push({ scope, key, limit });
  }
  return caps;
}

/** The caps of a run of a factory (its agent and automation included); undefined when none applies. */
export async function runCaps(
  q: Queryable,
  run: { factoryId?: string | null; automationId?: string | null; configName?: string | null },
): Promise<RunCaps | undefined> {
  if (!run.factoryId) return undefined;
  const row = await dailyCapsOf(q, run.factoryId, run.configName ?? null, run.automationId ?? null);
  if (!row) return undefined;
  const caps = [
    ...capsIn('factory', row.factory_caps),
    ...(row.agent ? capsIn('agent', row.agent_caps) : []),
    ...(run.automationId ? capsIn('automation', row.automation_caps) : []),
  ];
  return caps.length ? { factoryId: run.factoryId, automationId: run.automationId ?? null, row, caps } : undefined;
}

/** A factory's applied definition as stored (`factories.definition`), as far as its daily caps go. */
interface DefinitionCaps {
  factory?: { budget?: unknown } | null;
  agents?: readonly { name: string; execution?: { budget?: unknown } | null }[] | null;
}

/**
 * The caps of a run of `agent` (no automation) from its factory's definition already in hand: what `runCaps`
 * reads from the database for it, without the statement.
 */
export function agentRunCaps(
  factory: { id: string; name: string; definition: DefinitionCaps | null },
  agent: string,
): RunCaps | undefined {
  const definition = factory.definition;
  if (!definition) return undefined;
  const budget = (value: unknown) => (value && typeof value === 'object' ? (value as Record<string, unknown>) : null);
  const row: DailyCapsRow = {
    factory_name: factory.name,
    factory_caps: budget(definition.factory?.budget),
    agent,
    agent_caps: budget(definition.agents?.find((a) => a.name === agent)?.execution?.budget),
    automation_name: null,
    automation_caps: null,
  };
  const caps = [...capsIn('factory', row.factory_caps), ...capsIn('agent', row.agent_caps)];
  return caps.length ? { factoryId: factory.id, automationId: null, row, caps } : undefined;
}

/** The error a refused creation answers; `skipReason` is what an automation's firing records. */
export class DailyCapReached extends AppError {
  readonly skipReason: string;
  constructor(sentence: string, dayEnds: Date, now: Date, cap: Cap) {
    const retryAfter = Math.max(1, Math.ceil((dayEnds.getTime() - now.getTime()) / 1000));
    super('daily_cap_reached', `${sentence}; the next UTC day begins at ${dayEnds.toISOString()}`, {
      headers: { 'retry-after': String(retryAfter) },
      extensions: { cap: cap.key, scope: cap.scope, limit: cap.limit, resets_at: dayEnds.toISOString() },
    });
    this.skipReason = `skipped: ${sentence} (daily cap, UTC day)`;
  }
}

function describe(scope: Scope, row: DailyCapsRow): string {
  switch (scope) {
    case 'factory':
      return `factory ${row.factory_name}`;
    case 'agent':
      return `agent ${row.agent} of factory ${row.factory_name}`;
    case 'automation':
      return `automation ${row.automation_name} of factory ${row.factory_name}`;
  }
}

/** The first cap the day's usage has reached, as the sentence a refusal says, or undefined. */
export function capReached(caps: RunCaps, usage: DailyUsageRow): { cap: Cap; sentence: string } | undefined {
  for (const cap of caps.caps) {
    const runs = Number(usage[`${cap.scope}_runs`]);
    const cost = Number(usage[`${cap.scope}_cost`]);
    const who = describe(cap.scope, caps.row);
    const key = cap.scope === 'factory' ? `budget.${cap.key} in factory.yaml` : `budget.${cap.key}`;
    if (cap.key === 'dailyRuns' && runs >= cap.limit)
      return { cap, sentence: `${who} has started ${runs} runs today, its daily cap (${key}: ${cap.limit})` };
    if (cap.key === 'dailyCostUsd' && cost >= cap.limit)
      return {
        cap,
        sentence: `the runs of ${who} cost $${cost.toFixed(4)} today, reaching its daily cap (${key}: ${cap.limit})`,
      };
  }
  return undefined;
}

/**
 * In the creating transaction: takes the daily caps' lock, counts the day's runs and cost, and throws
 * DailyCapReached when a cap is reached. The lock is held until the transaction ends, so the next creation
 * counts this run.
 */
export async function enforceDailyCaps(
  tx: Queryable,
  caps: RunCaps,
  now: () => Date = () => new Date(),
): Promise<void> {
  await lockDailyCaps(tx);
  const usage = await dailyUsageOf(tx, caps.factoryId, caps.row.agent, caps.automationId);
  const reached = capReached(caps, usage);
  if (!reached) return;
  const dayEnds = new Date(new Date(usage.day_start).getTime() + 86_400_000);
  throw new DailyCapReached(reached.sentence, dayEnds, now(), reached.cap);
}
