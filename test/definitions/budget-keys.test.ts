/**
 * The budget keys of factory files beyond the deadline and turns: `maxTokens` and `maxCostUsd` inherit key by key
 * and reach the run configuration as `max_tokens` and `max_cost_usd`; the daily caps (`dailyRuns`,
 * `dailyCostUsd`) are the factory's in factory.yaml `budget`, an agent's through agentDefaults → agent, and an
 * automation's only when it declares them. Bad values are refused at their line and column.
 */
import { describe, expect, it } from 'vitest';
import { validateFactory } from '../../src/definitions/index.ts';
import { runConfigFor } from '../../src/factories/apply/run-config.ts';
import { tree } from './support.ts';

const FACTORY = `name: Test
repositories:
  - {owner: acme, name: api}
budget: {dailyRuns: 500, dailyCostUsd: 25.5}
agentDefaults:
  harness: {type: claude, model: opus}
  runner: linux
  budget: {maxTokens: 200000, maxCostUsd: 2.5, dailyRuns: 50}
`;
const RUNNER = 'platform: {linux: {dockerImage: "node:24"}}\n';
const AUTOMATION = (budget: string) =>
  `---\nagent: cheap\n${budget}triggers:\n  - provider: github\n    event: issue_created\n---\nGo.\n`;

describe('budget keys: tokens, cost and daily caps', () => {
  it('resolves them and puts the run budgets in the run configuration', async () => {
    const result = await validateFactory(
      tree({
        'factory.yaml': FACTORY,
        'runners/linux.yaml': RUNNER,
        'agents/cheap/agent.md': '---\nbudget: {maxCostUsd: 0.5, dailyCostUsd: 3}\n---\nCheap.\n',
        'agents/free/agent.md': '---\nbudget: {maxTokens: null, dailyRuns: null}\n---\nFree.\n',
        'automations/capped.md': AUTOMATION('budget: {dailyRuns: 5}\n'),
        'automations/plain.md': AUTOMATION(''),
      }),
    );
    expect(result.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    const def = result.definition!;
    expect(def.factory.budget).toEqual({ dailyRuns: 500, dailyCostUsd: 25.5 });
    const agent = (name: string) => def.agents.find((a) => a.name === name)!;
    const automation = (name: string) => def.automations.find((a) => a.name === name)!;
    expect(agent('cheap').execution.budget).toEqual({
      maxTokens: 200000,
      maxCostUsd: 0.5,
      dailyRuns: 50,
      dailyCostUsd: 3,
    });
    expect(agent('free').execution.budget).toEqual({ maxCostUsd: 2.5 });
    // the automation inherits the run budgets, not the agent's daily caps
    expect(automation('capped').execution.budget).toEqual({ maxTokens: 200000, maxCostUsd: 0.5, dailyRuns: 5 });
    expect(automation('plain').execution.budget).toEqual({ maxTokens: 200000, maxCostUsd: 0.5 });
    const config = runConfigFor(agent('cheap').execution, 'cheap');
    expect(config).toMatchObject({ max_tokens: 200000, max_cost_usd: 0.5 });
    expect(Object.keys(config)).not.toContain('daily_runs');
  });

  it('refuses bad values at their line and column', async () => {
    const result = await validateFactory(
      tree({
        'factory.yaml': FACTORY.replace('dailyRuns: 500', 'dailyRuns: 0').replace('maxCostUsd: 2.5', 'maxCostUsd: -1'),
        'runners/linux.yaml': RUNNER,
        'agents/cheap/agent.md': '---\nbudget: {maxTokens: 1.5, dailyCostUsd: "3"}\n---\nCheap.\n',
        'automations/capped.md': AUTOMATION('budget: {dailyRunz: 5}\n'),
      }),
    );
    const errors = result.diagnostics
      .filter((d) => d.severity === 'error')
      .map((d) => ({ file: d.file, path: d.path, line: d.line, column: d.column }));
    expect(errors).toEqual(
      expect.arrayContaining([
        { file: 'factory.yaml', path: '/budget/dailyRuns', line: 4, column: expect.any(Number) },
        { file: 'factory.yaml', path: '/agentDefaults/budget/maxCostUsd', line: 8, column: expect.any(Number) },
        { file: 'agents/cheap/agent.md', path: '/budget/maxTokens', line: 2, column: expect.any(Number) },
        { file: 'agents/cheap/agent.md', path: '/budget/dailyCostUsd', line: 2, column: expect.any(Number) },
        {
          file: 'automations/capped.md',
          path: expect.stringMatching(/^\/budget/),
          line: 3,
          column: expect.any(Number),
        },
      ]),
    );
    for (const e of errors) expect(e.column).toBeGreaterThan(0);
  });
});
