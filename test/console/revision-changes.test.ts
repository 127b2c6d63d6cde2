/** A revision's resources read from its changed files alone (for a refused revision, which has no plan). */
import { describe, expect, it } from 'vitest';
import { changesFromFiles, resourceOfPath } from '../../src/console/revision-changes.ts';

describe('changesFromFiles', () => {
  it('names each file as the resource it defines', () => {
    expect(resourceOfPath('factory.yaml')).toEqual({ kind: 'factory', name: 'factory.yaml' });
    expect(resourceOfPath('agents/foreman/agent.md')).toEqual({ kind: 'agent', name: 'foreman' });
    expect(resourceOfPath('automations/triage/automation.md')).toEqual({ kind: 'automation', name: 'triage' });
    expect(resourceOfPath('automations/triage.md')).toEqual({ kind: 'automation', name: 'triage' });
    expect(resourceOfPath('webhooks/ci.yaml')).toEqual({ kind: 'webhook', name: 'ci' });
    expect(resourceOfPath('runners/default.yaml')).toEqual({ kind: 'runner', name: 'default' });
    expect(resourceOfPath('scorers/tests/scorer.md')).toEqual({ kind: 'scorer', name: 'tests' });
    expect(resourceOfPath('skills/deploy/SKILL.md')).toEqual({ kind: 'skill', name: 'skills/deploy' });
    expect(resourceOfPath('agents/foreman/skills/x/SKILL.md')).toEqual({
      kind: 'skill',
      name: 'agents/foreman/skills/x',
    });
    expect(resourceOfPath('benchmarks/smoke/tasks/one.yaml')).toEqual({ kind: 'benchmark', name: 'smoke' });
    for (const stray of ['README.md', 'agents/foreman/notes.md', 'webhooks/deep/ci.yaml', 'automations/a/b.md'])
      expect(resourceOfPath(stray)).toBeUndefined();
  });

  it('counts a resource once, by the file that defines it', () => {
    const changes = changesFromFiles([
      { path: 'benchmarks/new/suite.yaml', status: 'added', diff: '' },
      { path: 'benchmarks/new/tasks/a.yaml', status: 'added', diff: '' },
      { path: 'benchmarks/old/tasks/b.yaml', status: 'added', diff: '' },
      { path: 'webhooks/gone.yaml', status: 'removed', diff: '' },
      { path: 'README.md', status: 'changed', diff: '' },
    ]);
    expect(changes).toEqual([
      { kind: 'benchmark', name: 'new', file: 'benchmarks/new/suite.yaml', action: 'created' },
      { kind: 'benchmark', name: 'old', file: 'benchmarks/old/tasks/b.yaml', action: 'updated' },
      { kind: 'webhook', name: 'gone', file: 'webhooks/gone.yaml', action: 'deleted' },
    ]);
  });
});
