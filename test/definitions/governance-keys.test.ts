/**
 * The governance extensions of factory files: `budget` (maxDurationSeconds, maxTurns) inherits key by key
 * through agentDefaults → agent → automation and reaches the run configuration as `max_duration_seconds` and
 * `max_turns`; a runner's `network` (the egress policy) is stored as written, and a bad host is refused.
 */
import { describe, expect, it } from 'vitest';
import { validateFactory } from '../../src/definitions/index.ts';
import { runConfigFor } from '../../src/factories/apply/run-config.ts';
import { networkPolicyFrom } from '../../src/execution/egress/policy.ts';
import { tree } from './support.ts';

const FACTORY = `name: Test
repositories:
  - {owner: acme, name: api}
agentDefaults:
  harness: {type: claude, model: opus}
  runner: linux
  budget: {maxDurationSeconds: 600, maxTurns: 40}
`;
const RUNNER = 'platform: {linux: {dockerImage: "node:24"}}\nnetwork: {allow: [github.com, "*.npmjs.org"]}\n';

describe('governance keys in factory files', () => {
  it('inherits budget key by key and puts it in the run configuration', async () => {
    const result = await validateFactory(
      tree({
        'factory.yaml': FACTORY,
        'runners/linux.yaml': RUNNER,
        'agents/quick/agent.md': '---\nbudget: {maxDurationSeconds: 60}\n---\nQuick.\n',
        'agents/free/agent.md': '---\nbudget: {maxTurns: null}\n---\nFree.\n',
      }),
    );
    expect(result.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    const agent = (name: string) => result.definition!.agents.find((a) => a.name === name)!;
    expect(agent('quick').execution.budget).toEqual({ maxDurationSeconds: 60, maxTurns: 40 });
    expect(agent('free').execution.budget).toEqual({ maxDurationSeconds: 600 });
    expect(runConfigFor(agent('quick').execution, 'quick')).toMatchObject({ max_duration_seconds: 60, max_turns: 40 });
    expect(runConfigFor(agent('free').execution, 'free').max_turns).toBeUndefined();
    const runner = result.definition!.runners.find((r) => r.name === 'linux')!;
    expect(runner.network).toEqual({ allow: ['github.com', '*.npmjs.org'] });
    expect(networkPolicyFrom(runner.network)).toEqual({ mode: 'allow', hosts: ['github.com', '*.npmjs.org'] });
  });

  it('refuses a bad budget and a bad network host, naming the key', async () => {
    const result = await validateFactory(
      tree({
        'factory.yaml': FACTORY,
        'runners/linux.yaml': 'platform: {linux: {dockerImage: "node:24"}}\nnetwork: {allow: ["http://x/"]}\n',
        'runners/other.yaml': 'platform: {linux: {dockerImage: "node:24"}}\nnetwork: all\n',
        'agents/a/agent.md': '---\nbudget: {maxDurationSeconds: 0}\n---\nA.\n',
      }),
    );
    const errors = result.diagnostics.filter((d) => d.severity === 'error').map((d) => [d.file, d.path]);
    expect(errors).toEqual(
      expect.arrayContaining([
        ['runners/linux.yaml', '/network/allow/0'],
        ['runners/other.yaml', expect.stringMatching(/^\/network/)],
        ['agents/a/agent.md', expect.stringMatching(/^\/budget/)],
      ]),
    );
  });
});
