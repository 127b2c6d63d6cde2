/**
 * `x-agentyard-limits`, Agentyard's extension key of runner files: checked by the runner schema (positive
 * integers, a boolean, no other key) and kept in the resolved definition for the executors.
 */
import { describe, expect, it } from 'vitest';
import { validateFactory } from '../../src/definitions/index.ts';
import { tree } from './support.ts';

const runner = (limits: string): Record<string, string> => ({
  'runners/linux.yaml': `platform:\n  linux:\n    dockerImage: node:24\nx-agentyard-limits:\n${limits}`,
});

describe('x-agentyard-limits in a runner file', () => {
  it('is kept in the definition', async () => {
    const result = await validateFactory(
      tree(
        runner(
          '  processes: 64\n  tmpMiB: 32\n  workspaceMiB: 512\n  events: 500\n  outputMiB: 4\n  nestedUserNamespaces: true\n',
        ),
      ),
    );
    expect(result.diagnostics).toEqual([]);
    expect(result.definition!.runners[0]!.limits).toEqual({
      processes: 64,
      tmpMiB: 32,
      workspaceMiB: 512,
      events: 500,
      outputMiB: 4,
      nestedUserNamespaces: true,
    });
    // a runner without the key has no limits of its own
    const plain = await validateFactory(tree());
    expect(plain.definition!.runners[0]).not.toHaveProperty('limits');
  });

  it('refuses a non-positive, fractional or unknown limit, naming the key', async () => {
    for (const [limits, path] of [
      ['  processes: 0\n', '/x-agentyard-limits/processes'],
      ['  tmpMiB: 1.5\n', '/x-agentyard-limits/tmpMiB'],
      ['  events: many\n', '/x-agentyard-limits/events'],
      ['  memoryMiB: 10\n', '/x-agentyard-limits/memoryMiB'],
    ] as const) {
      const result = await validateFactory(tree(runner(limits)));
      expect(
        result.diagnostics.map((d) => [d.file, d.path, d.severity]),
        limits,
      ).toContainEqual(['runners/linux.yaml', path, 'error']);
    }
  });
});
