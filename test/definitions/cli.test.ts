import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = new URL('../../', import.meta.url).pathname;
const BIN = join(ROOT, 'bin/agentyard.js');
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function run(...args: string[]) {
  const result = spawnSync(process.execPath, [BIN, 'validate', ...args], { cwd: ROOT, encoding: 'utf8' });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

function brokenTree(): string {
  const dir = mkdtempSync(join(tmpdir(), 'validate-cli-'));
  dirs.push(dir);
  cpSync(join(ROOT, 'test/definitions/fixtures/base'), dir, { recursive: true });
  writeFileSync(
    join(dir, 'factory.yaml'),
    'name: x\nrepositories: [{owner: a, name: b}]\nagentDefaults:\n  model: auto\n  runer: linux\n',
  );
  mkdirSync(join(dir, 'scorers'), { recursive: true });
  return dir;
}

describe('agentyard validate', () => {
  it.each(['examples/token-webhook', 'examples/github-signature', 'examples/self-hosted-worker'])(
    'accepts %s (exit 0)',
    (example) => {
      const { code, stdout, stderr } = run(example);
      expect(stdout).toBe('');
      expect(stderr).toMatch(/0 errors/);
      expect(code).toBe(0);
    },
  );

  it('prints one text line per problem and exits 1', () => {
    const { code, stdout } = run(brokenTree());
    expect(stdout).toBe(
      'factory.yaml:5:3: error FF_UNKNOWN_FIELD: unknown key `runer` in `agentDefaults`; did you mean `runner`?\n',
    );
    expect(code).toBe(1);
  });

  it('--json prints the result as JSON', () => {
    const { code, stdout } = run(brokenTree(), '--json');
    const body = JSON.parse(stdout);
    expect(body.valid).toBe(false);
    expect(body.schema_version).toBe('v1alpha1');
    expect(body.diagnostics).toEqual([
      {
        file: 'factory.yaml',
        line: 5,
        column: 3,
        path: '/agentDefaults/runer',
        code: 'FF_UNKNOWN_FIELD',
        message: 'unknown key `runer` in `agentDefaults`; did you mean `runner`?',
        severity: 'error',
      },
    ]);
    expect(code).toBe(1);
  });

  it('--format github prints workflow commands', () => {
    const { code, stdout } = run('--format', 'github', brokenTree());
    expect(stdout).toMatch(/^::error file=factory.yaml,line=5,col=3,title=FF_UNKNOWN_FIELD::/);
    expect(code).toBe(1);
  });

  it('warnings alone exit 0', () => {
    const dir = mkdtempSync(join(tmpdir(), 'validate-cli-'));
    dirs.push(dir);
    cpSync(join(ROOT, 'test/definitions/fixtures/base'), dir, { recursive: true });
    writeFileSync(
      join(dir, 'factory.yaml'),
      'name: x\nrepositories: [{owner: a, name: b}]\nagentDefaults: {model: no-such-model-xyz, runner: linux}\n',
    );
    const { code, stdout } = run(dir);
    expect(stdout).toMatch(/warning \S+ .*no-such-model-xyz/);
    expect(code).toBe(0);
  });

  it('checks model ids against the catalogue: a did-you-mean warning, an error when it is closed', () => {
    const dir = mkdtempSync(join(tmpdir(), 'validate-cli-'));
    dirs.push(dir);
    cpSync(join(ROOT, 'test/definitions/fixtures/base'), dir, { recursive: true });
    writeFileSync(
      join(dir, 'factory.yaml'),
      'name: x\nrepositories: [{owner: a, name: b}]\nagentDefaults: {model: autoo, runner: linux}\n',
    );
    const { code, stdout } = run(dir);
    expect(stdout).toMatch(/factory\.yaml:3:\d+: warning \S+ .*autoo/);
    expect(stdout).toMatch(/did you mean `auto`/i);
    expect(code).toBe(0);
    const closed = spawnSync(process.execPath, [BIN, 'validate', dir], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, AGENTYARD_MODEL_CATALOGUE: 'closed' },
    });
    expect(closed.stdout).toMatch(/factory\.yaml:3:\d+: error .*autoo/);
    expect(closed.status).toBe(1);
  });

  it('usage errors exit 2', () => {
    expect(run().code).toBe(2);
    expect(run('a', 'b').code).toBe(2);
    expect(run('--format', 'xml', 'examples/token-webhook').code).toBe(2);
    expect(run('/no/such/dir').code).toBe(2);
  });
});
