/**
 * The run's usage budgets (`config.max_tokens`, `config.max_cost_usd`): what the agent reported so far, added to
 * what the run's earlier executions used, against them. The runner asks after every `usage` event.
 */

/** What a run's earlier executions used (its `request_usage` when this execution was assigned). */
export interface UsageBefore {
  total_tokens: number;
  cost_usd: number;
}

/** What this execution's agent reported so far (the runner's sums of its `usage` events). */
export interface ReportedUsage {
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
}

function positive(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : undefined;
}

/** The earlier executions' usage, from a run's `request_usage` (keys as ay_end_executions sums them). */
export function usageBefore(requestUsage: Record<string, number> | null | undefined): UsageBefore | undefined {
  if (!requestUsage) return undefined;
  const tokens =
    positive(requestUsage.total_tokens) ??
    (positive(requestUsage.input_tokens) ?? 0) + (positive(requestUsage.output_tokens) ?? 0);
  const cost = positive(requestUsage.inference_cost_usd) ?? 0;
  return tokens || cost ? { total_tokens: tokens, cost_usd: cost } : undefined;
}

/** Cost figures compared at this precision: sums of reported floats never fail a budget by rounding. */
const COST_EPSILON = 1e-9;

/**
 * The first usage budget the run has passed (its message and the recorded error code that names it), or undefined. Tokens are input + output (cached input
 * tokens are part of the input as each harness reports it); cost is what the harness reports (`cost_usd`).
 */
export function usageBudgetPassed(
  config: Record<string, unknown>,
  before: UsageBefore | undefined,
  usage: ReportedUsage,
): { message: string; errorCode: 'max_tokens_exceeded' | 'max_cost_exceeded' } | undefined {
  const maxTokens = positive(config.max_tokens);
  if (maxTokens !== undefined) {
    const tokens = (before?.total_tokens ?? 0) + usage.input_tokens + usage.output_tokens;
    if (tokens > maxTokens)
      return {
        message: `budget_exceeded: the run used ${tokens} tokens, past its token budget of ${maxTokens} (max_tokens)`,
        errorCode: 'max_tokens_exceeded',
      };
  }
  const maxCost = positive(config.max_cost_usd);
  if (maxCost !== undefined) {
    const cost = (before?.cost_usd ?? 0) + usage.cost_usd;
    if (cost > maxCost + COST_EPSILON)
      return {
        message: `budget_exceeded: the run cost $${cost.toFixed(4)}, past its cost budget of $${maxCost} (max_cost_usd)`,
        errorCode: 'max_cost_exceeded',
      };
  }
  return undefined;
}
