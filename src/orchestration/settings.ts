/** The run tree's limits from the environment (docs/orchestration.md § Limits). */
import { DEFAULT_TREE_LIMITS } from '../runs/tree.ts';
import type { TreeLimits } from '../runs/tree.ts';

const VARIABLES: Record<keyof TreeLimits, string> = {
  maxDepth: 'AGENTYARD_RUN_TREE_MAX_DEPTH',
  maxChildren: 'AGENTYARD_RUN_MAX_CHILDREN',
  maxActivePerFactory: 'AGENTYARD_FACTORY_MAX_ACTIVE_RUNS',
  maxTreeMinutes: 'AGENTYARD_RUN_TREE_MAX_MINUTES',
};

export function treeLimits(env: NodeJS.ProcessEnv, overrides: Partial<TreeLimits> = {}): TreeLimits {
  const limits = { ...DEFAULT_TREE_LIMITS };
  for (const [key, name] of Object.entries(VARIABLES) as [keyof TreeLimits, string][]) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, not "${raw}"`);
    limits[key] = value;
  }
  return { ...limits, ...overrides };
}
