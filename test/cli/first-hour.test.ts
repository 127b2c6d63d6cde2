/**
 * What a newcomer meets first on the command line: an old Node says which version to get, `--version`,
 * did-you-mean for commands and options, one-line option errors, `serve --help`, and offline `validate`
 * refusing a runner that no file defines. The program runs as a separate process, as a shell runs it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MINIMUM_NODE, nodeVersionProblem } from '../../bin/node-version.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const BIN = path.join(ROOT, 'bin/agentyard.js');
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  engines: { node: string };
};
const work = mkdtempSync(path.join(tmpdir(), 'agentyard-first-hour-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function run(args: string[], node = process.execPath) {
  const result = spawnSync(node, [BIN, ...args], {
    cwd: work,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, AGENTYARD_URL: 'http://127.0.0.1:9', AGENTYARD_API_KEY: 'k', AGENTYARD_DATA_DIR: work },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('an old Node', () => {
  it('the minimum is package.json engines.node', () => {
    expect(pkg.engines.node).toBe(`>=${MINIMUM_NODE}`);
  });

  it.each(['20.20.2', '18.19.0', '22.21.9', '22.9.0'])('%s gets one line naming 22.22 and how to get it', (v) => {
    const problem = nodeVersionProblem(v);
    expect(problem).toBeDefined();
    expect(problem!.split('\n')).toHaveLength(1);
    expect(problem).toContain('22.22');
    expect(problem).toContain(`this is ${v}`);
    expect(problem).toContain('https://nodejs.org/en/download');
  });

  it.each(['22.22.0', '22.22.1', '23.0.0', '24.11.1', '25.0.0-pre'])('%s passes', (v) => {
    expect(nodeVersionProblem(v)).toBeUndefined();
  });

  // Debian's Node 20 where the machine has it: the real thing, before any .ts file is loaded.
  it.skipIf(!existsSync('/usr/bin/node') || !nodeVersionProblem(nodeVersionOf('/usr/bin/node')))(
    'the bin under the system Node prints that line, not ERR_UNKNOWN_FILE_EXTENSION',
    () => {
      const result = run(['serve'], '/usr/bin/node');
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toContain('needs Node.js 22.22 or newer');
      expect(result.stderr).not.toContain('ERR_UNKNOWN_FILE_EXTENSION');
    },
  );
});

function nodeVersionOf(node: string): string {
  return spawnSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.trim();
}

describe('agentyard --version', () => {
  it("prints package.json's version", () => {
    const result = run(['--version']);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe(pkg.version);
  });
});

describe('mistakes get one clean line', () => {
  it.each([
    [['valdate'], 'agentyard: unknown command "valdate"; did you mean "validate"?'],
    [['--verison'], 'agentyard: unknown option "--verison"; did you mean "--version"?'],
    [['serve', '--prot', '9'], 'agentyard serve: unknown option --prot; did you mean --port?'],
    [['serve', '--bogus'], 'agentyard serve: unknown option --bogus (agentyard serve --help)'],
    [['validate', '--formt', 'json', '.'], 'agentyard validate: unknown option --formt; did you mean --format?'],
    [['plan', '.', '--factroy', 'x'], 'agentyard plan: unknown option --factroy; did you mean --factory?'],
    [['apply', '.', '--factory', 'x', '--force'], 'agentyard apply: unknown option --force'],
    [['worker', '--capacty', '3'], 'agentyard worker: unknown option --capacty; did you mean --capacity?'],
    [['operator', '--namspace', 'x'], 'agentyard operator: unknown option --namspace; did you mean --namespace?'],
    [['serve', '--port'], 'agentyard serve: option --port needs a value'],
    [['migrate', 'now'], 'agentyard migrate: unexpected argument "now"'],
    [['validate', '--format', 'jsn', '.'], 'agentyard validate: unknown format "jsn"; did you mean "json"?'],
  ])('%j', (args, line) => {
    const result = run(args);
    expect(result.code).toBe(2);
    const lines = result.stderr.trim().split('\n');
    expect(lines, result.stderr).toHaveLength(1);
    expect(lines[0]).toContain(line);
    expect(result.stderr).not.toContain('To specify a positional argument');
  });
});

describe('agentyard serve --help', () => {
  it('lists every option serve takes', () => {
    const result = run(['serve', '--help']);
    expect(result.code).toBe(0);
    for (const option of ['--port', '--host', '--factory', '--roles', '--data-dir', '--help'])
      expect(result.stdout).toMatch(new RegExp(`^ +(-h, )?${option} `, 'm'));
    expect(result.stdout).toContain('AGENTYARD_HARNESSES');
  });
});

describe('offline validate', () => {
  it('refuses a runner name that no file defines', () => {
    const dir = path.join(work, 'factory');
    const write = (file: string, text: string): void => {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      writeFileSync(path.join(dir, file), text);
    };
    write(
      'factory.yaml',
      'schemaVersion: v1alpha1\nname: demo\nrepositories:\n  - { owner: acme, name: app }\nagentDefaults:\n  model: auto\n  runner: defualt\n',
    );
    write('runners/default.yaml', 'platform:\n  linux:\n    dockerImage: node:24\n');
    write('agents/foreman/agent.md', '---\nagentType: FOREMAN\n---\nYou triage.\n');
    const result = run(['validate', dir]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(
      'factory.yaml:7:11: error FF_INVALID_REFERENCE: no runner named `defualt`: neither runners/defualt.yaml nor a team runner; did you mean `default`?',
    );
    write('factory.yaml', readFileSync(path.join(dir, 'factory.yaml'), 'utf8').replace('defualt', 'default'));
    const fixed = run(['validate', dir]);
    expect(fixed.code, fixed.stdout).toBe(0);
  });
});
