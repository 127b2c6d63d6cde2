import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Re-check PyPI and npm for a newer official client at most this often. */
const REFRESH_MS = 12 * 60 * 60 * 1000;

export const PYTHON_VENV = process.env.AGENTYARD_PYVENV ?? path.join(homedir(), '.cache', 'agentyard-pyvenv');
export const NPM_CLIENT_DIR =
  process.env.AGENTYARD_NPM_CLIENT_DIR ?? path.join(homedir(), '.cache', 'agentyard-oz-npm');

function fresh(stamp: string): boolean {
  return existsSync(stamp) && Date.now() - statSync(stamp).mtimeMs < REFRESH_MS;
}

async function loud<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    // Never skip: a compatibility suite that silently does nothing would hide a broken client.
    throw new Error(
      `${what} failed; the compatibility tests need it (network access to the registry):\n${e.stderr ?? e.message}`,
    );
  }
}

/**
 * A Python virtual environment with the newest `oz-agent-sdk` from PyPI. Created on first use, upgraded
 * at most every 12 hours. Answers the venv's python executable.
 */
export async function ensurePythonClient(): Promise<{ python: string; version: string }> {
  const python = path.join(PYTHON_VENV, 'bin', 'python');
  if (!existsSync(python)) {
    mkdirSync(path.dirname(PYTHON_VENV), { recursive: true });
    await loud('python3 -m venv', () => run('python3', ['-m', 'venv', PYTHON_VENV], { timeout: 120_000 }));
  }
  const stamp = path.join(PYTHON_VENV, '.oz-agent-sdk-checked');
  if (!fresh(stamp)) {
    // `pip install --upgrade` succeeds quietly when the index is unreachable and a copy is installed, so ask
    // the index for the newest version first: that fails when PyPI cannot be reached.
    const { stdout: index } = await loud('pip index versions oz-agent-sdk (PyPI)', () =>
      run(python, ['-m', 'pip', 'index', 'versions', 'oz-agent-sdk'], { timeout: 120_000 }),
    );
    const newest = /oz-agent-sdk \(([^)]+)\)/.exec(index)?.[1];
    if (!newest) throw new Error(`could not read the newest oz-agent-sdk version from pip:\n${index}`);
    await loud(`pip install oz-agent-sdk==${newest}`, () =>
      run(python, ['-m', 'pip', 'install', '--quiet', `oz-agent-sdk==${newest}`], { timeout: 300_000 }),
    );
    writeFileSync(stamp, newest);
  }
  const { stdout } = await loud('importing oz_agent_sdk', () =>
    run(python, ['-c', 'import oz_agent_sdk; print(oz_agent_sdk.__version__)']),
  );
  return { python, version: stdout.trim() };
}

export interface NpmClient {
  version: string;
  /** The module's namespace (default export: the OzAPI class). */
  module: typeof import('oz-agent-sdk');
}

/**
 * The newest `oz-agent-sdk` that npm has. When it is the devDependency's version, that copy; otherwise it is
 * installed into a cache directory (at most every 12 hours) and loaded from there.
 */
export async function newestNpmClient(): Promise<NpmClient> {
  const stamp = path.join(NPM_CLIENT_DIR, '.newest');
  let newest: string;
  if (fresh(stamp)) {
    newest = readFileSync(stamp, 'utf8').trim();
  } else {
    const { stdout } = await loud('npm view oz-agent-sdk version', () =>
      run('npm', ['view', 'oz-agent-sdk', 'version'], { timeout: 120_000 }),
    );
    newest = stdout.trim();
  }
  const bundled = JSON.parse(
    readFileSync(new URL('../../node_modules/oz-agent-sdk/package.json', import.meta.url), 'utf8'),
  ) as { version: string };
  mkdirSync(NPM_CLIENT_DIR, { recursive: true });
  if (newest === bundled.version) {
    writeFileSync(stamp, newest);
    return { version: newest, module: await import('oz-agent-sdk') };
  }
  const installed = path.join(NPM_CLIENT_DIR, 'node_modules', 'oz-agent-sdk');
  const installedVersion = existsSync(path.join(installed, 'package.json'))
    ? (JSON.parse(readFileSync(path.join(installed, 'package.json'), 'utf8')) as { version: string }).version
    : undefined;
  if (installedVersion !== newest) {
    await loud(`npm install oz-agent-sdk@${newest}`, () =>
      run('npm', ['install', '--no-save', '--no-package-lock', '--prefix', NPM_CLIENT_DIR, `oz-agent-sdk@${newest}`], {
        timeout: 300_000,
      }),
    );
  }
  writeFileSync(stamp, newest);
  const entry = ['index.mjs', 'index.js'].map((f) => path.join(installed, f)).find((f) => existsSync(f));
  if (!entry) throw new Error(`oz-agent-sdk@${newest} installed in ${installed} has no index.mjs or index.js`);
  return { version: newest, module: (await import(pathToFileURL(entry).href)) as typeof import('oz-agent-sdk') };
}
