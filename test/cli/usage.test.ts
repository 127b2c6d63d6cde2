/**
 * The command line as a newcomer meets it: `--help` lists every command, and a usage problem exits 2
 * whatever the command (the program runs as a separate process, as a shell runs it).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { COMMANDS, COMMAND_USAGE } from '../../src/cli/main.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const BIN = path.join(ROOT, 'bin/agentyard.js');
const dataDir = mkdtempSync(path.join(tmpdir(), 'agentyard-usage-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

function run(...args: string[]) {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
    // Nothing here may reach a server: an unused port on loopback.
    env: { ...process.env, AGENTYARD_URL: 'http://127.0.0.1:9', AGENTYARD_API_KEY: 'k', AGENTYARD_DATA_DIR: dataDir },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('agentyard --help', () => {
  it('lists every command, plan and apply included', () => {
    const help = run('--help');
    expect(help.code).toBe(0);
    expect(Object.keys(COMMAND_USAGE).sort()).toEqual(Object.keys(COMMANDS).sort());
    for (const name of Object.keys(COMMANDS)) expect(help.stdout).toContain(`  agentyard ${name} `.trimEnd());
    expect(help.stdout).toContain('agentyard plan DIR --factory NAME');
    expect(help.stdout).toContain('agentyard apply DIR --factory NAME');
    expect(help.stdout).toContain('2 usage problem');
  });

  it.each(Object.keys(COMMANDS))('%s --help answers its usage and exits 0', (name) => {
    const help = run(name, '--help');
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toContain(`agentyard ${name}`);
  });
});

describe('usage problems exit 2 everywhere', () => {
  it.each([
    ['no command', []],
    ['an unknown command', ['frobnicate']],
    ['serve with an unknown option', ['serve', '--bogus']],
    ['serve with a port that is not a number', ['serve', '--port', 'eighty']],
    ['serve with an unknown role', ['serve', '--roles', 'api,janitor']],
    ['migrate with an argument', ['migrate', 'now']],
    ['openapi with an unknown option', ['openapi', '--out', 'x']],
    ['validate without a directory', ['validate']],
    ['plan without --factory', ['plan', '.']],
    ['apply with an unknown option', ['apply', '.', '--factory', 'x', '--force']],
    ['worker without --worker-id', ['worker']],
  ])('%s', (_name, args) => {
    const result = run(...args);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).not.toContain('    at ');
  });
});
