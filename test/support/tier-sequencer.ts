/**
 * The order in which `npm test` starts its files: the heavy tier first, then the database tier, the fast tier
 * last; within a tier, vitest's own order (the longest first by the last run's durations, by size in a fresh
 * clone). Vitest orders the tiers by name, which started the heavy tier's long files (tsc, browsers, several
 * processes) last: one fork ran on alone while the others had nothing left. The fast tier's short files now
 * fill the end, and a tier's files stay together, so its forks are reused from file to file.
 */
import { BaseSequencer } from 'vitest/node';
import type { TestSpecification } from 'vitest/node';

const RANK: Record<string, number> = { heavy: 0, db: 1, fast: 2 };

export class TierSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification): number => RANK[spec.project.name] ?? 1;
    return sorted
      .map((spec, index) => ({ spec, index }))
      .sort((a, b) => rank(a.spec) - rank(b.spec) || a.index - b.index)
      .map(({ spec }) => spec);
  }
}
