/**
 * The official Python client (the newest `oz-agent-sdk` on PyPI, in a virtual environment this test creates)
 * against a live server, configured only through OZ_API_BASE_URL and WARP_API_KEY. No network → the test
 * fails; it never skips.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { ensurePythonClient } from './support.ts';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('./oz_python_client.py', import.meta.url));

describe.each(ENGINES)('official Python client against a live server on %s', (engine) => {
  let s: TestServer;
  let python: string;
  let version: string;
  beforeAll(async () => {
    ({ python, version } = await ensurePythonClient());
    s = await startTestServer(engine);
  }, 600_000);
  afterAll(async () => {
    await s?.close();
  });

  it('creates, retrieves, lists with filters and auto-pagination, cancels, maps errors, and uses the newer endpoints', async () => {
    const { stdout, stderr } = await run(python, [SCRIPT], {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        OZ_API_BASE_URL: s.apiUrl,
        WARP_API_KEY: s.adminKey,
        COMPAT_TAG: engine,
      },
      timeout: 180_000,
    }).catch((err: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(
        `oz-agent-sdk ${version} (Python) failed against the server:\n${err.stderr ?? ''}\n${err.stdout ?? ''}\n${err.message}`,
      );
    });
    const summary = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
      sdk_version: string;
      created: string;
      paged: number;
      cancel_raw: string;
      errors: string[];
    };
    expect(stderr).not.toMatch(/Traceback/);
    expect(summary.sdk_version).toBe(version);
    expect(summary.paged).toBe(12);
    // The reference's quirk: Python's `str` cast keeps the JSON quotes of the cancel answer.
    expect(summary.cancel_raw).toMatch(/^"run_[0-9a-z]+"$/);
    const created = await s.api('GET', `/agent/runs/${summary.created}`);
    expect(created.body.agent_config.mcp_servers).toEqual({ gh: { command: 'gh-mcp', args: ['--x'] } });
    const followups = await s.api('GET', `/agent/runs/${summary.created}/followups`);
    expect(followups.body.followups.map((f: { message: string }) => f.message)).toEqual(['also look at the docs']);
  });
});
