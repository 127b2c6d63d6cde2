/** What `agentyard plan` and `apply` print for a plan's warnings. */
import { describe, expect, it } from 'vitest';
import { formatWarnings } from '../../src/cli/plan.ts';
import type { PlanWarning } from '../../src/factories/apply/model.ts';

describe('formatWarnings', () => {
  it('prints file:line lines, identical warnings once', () => {
    const warning: PlanWarning = {
      code: 'webhook_renamed',
      file: 'webhooks/a.yaml',
      line: 1,
      path: '',
      message: 'renamed',
    };
    const other = { ...warning, file: 'webhooks/b.yaml' };
    expect(formatWarnings([warning, { ...warning }, other])).toBe(
      'webhooks/a.yaml:1:1: warning webhook_renamed: renamed\nwebhooks/b.yaml:1:1: warning webhook_renamed: renamed\n',
    );
  });
});
