import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadFactoryFiles, readFactoryDir, validateFactory } from '../../src/definitions/index.ts';
import { tree } from './support.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function write(root: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), content);
  }
}

describe('readFactoryDir', () => {
  it('reads the root and resource directories, skips hidden and unrelated directories, never follows symlinks', async () => {
    const root = mkdtempSync(join(tmpdir(), 'factory-'));
    dirs.push(root);
    write(root, {
      'factory.yaml': 'name: x\n',
      'README.md': '# docs',
      'agents/foreman/agent.md': '---\n---\n',
      '.github/workflows/ci.yaml': 'on: push\n',
      'src/index.ts': 'export {}',
      'notes.txt': 'ignored',
    });
    const outside = mkdtempSync(join(tmpdir(), 'outside-'));
    dirs.push(outside);
    writeFileSync(join(outside, 'r.yaml'), 'platform: {linux: {dockerImage: x}}\n');
    symlinkSync(join(outside, 'r.yaml'), join(root, 'runners-link.yaml'));
    mkdirSync(join(root, 'runners'));
    symlinkSync(join(outside, 'r.yaml'), join(root, 'runners', 'linked.yaml'));
    symlinkSync(outside, join(root, 'skills'));

    const files = await readFactoryDir(root);
    expect(files.map((f) => `${f.path}${f.symlink ? ' (symlink)' : ''}`)).toEqual([
      'README.md',
      'agents/foreman/agent.md',
      'factory.yaml',
      'runners-link.yaml (symlink)',
      'runners/linked.yaml (symlink)',
      'skills (symlink)',
    ]);
    const loaded = loadFactoryFiles(files);
    expect(loaded.diagnostics).toEqual([
      {
        file: 'runners/linked.yaml',
        line: 1,
        column: 1,
        path: '',
        code: 'FF_UNSUPPORTED_PATH',
        message: expect.stringContaining('symbolic link'),
        severity: 'error',
      },
      {
        file: 'skills',
        line: 1,
        column: 1,
        path: '',
        code: 'FF_UNSUPPORTED_PATH',
        message: expect.stringContaining('symbolic link'),
        severity: 'error',
      },
    ]);
    expect(loaded.files.map((f) => [f.path, f.kind, f.name])).toEqual([
      ['agents/foreman/agent.md', 'agent', 'foreman'],
      ['factory.yaml', 'factory', 'factory'],
    ]);
  });

  it('rejects a path that is not a directory', async () => {
    await expect(readFactoryDir('/definitely/not/here')).rejects.toThrow();
  });
});

describe('loadFactoryFiles', () => {
  it('classifies every canonical path', () => {
    const loaded = loadFactoryFiles(
      [
        'factory.yaml',
        'agents/a/agent.md',
        'agents/a/skills/x/SKILL.md',
        'agents/a/skills/group/y/SKILL.md',
        'automations/b/automation.md',
        'automations/c.md',
        'runners/r.yaml',
        'scorers/s/scorer.md',
        'skills/k/SKILL.md',
        'skills/deep/er/SKILL.md',
        'webhooks/w.yaml',
        'benchmarks/suite1/suite.yaml',
        'benchmarks/suite1/tasks/t1.yaml',
        'automations/README.md',
        'agents/a/notes.md',
        'skills/k/helper.py',
      ].map((path) => ({ path, content: '' })),
    );
    expect(loaded.diagnostics).toEqual([]);
    expect(loaded.files.map((f) => `${f.kind}:${f.name}${f.owner ? `@${f.owner}` : ''}`).sort()).toEqual(
      [
        'factory:factory',
        'agent:a',
        'agent-skill:x@a',
        'agent-skill:y@a',
        'automation:b',
        'automation:c',
        'runner:r',
        'scorer:s',
        'skill:k',
        'skill:er',
        'webhook:w',
        'benchmark-suite:suite1',
        'benchmark-task:t1@suite1',
      ].sort(),
    );
  });

  it('reports a duplicated input path and oversized files', async () => {
    const huge = `description: "${'x'.repeat(300 * 1024)}"\nplatform: {linux: {dockerImage: x}}\n`;
    const result = await validateFactory([
      ...tree({ 'runners/huge.yaml': huge }),
      { path: 'factory.yaml', content: 'x: 1' },
    ]);
    expect(result.diagnostics.map((d) => `${d.file} ${d.code}`)).toEqual([
      'factory.yaml FF_DUPLICATE_PATH',
      'runners/huge.yaml FF_LIMIT_EXCEEDED',
    ]);
  });
});
