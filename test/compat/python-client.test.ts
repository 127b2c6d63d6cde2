/**
 * The official Python client (the newest `oz-agent-sdk` on PyPI, in a virtual environment this test creates)
 * against a live server, configured only through OZ_API_BASE_URL and WARP_API_KEY. No network → the test
 * fails; it never skips.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACT_URL_KEY_PURPOSE, signedDownloadUrl } from '../../src/runs/artifact-files.ts';
import { SecretCipher } from '../../src/secrets/crypto.ts';
import { createRun, startExecServer, waitForState } from '../execution/support.ts';
import { ENGINES } from '../support/db.ts';
import { startTestServer, TEST_MASTER_KEY } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { ensurePythonClient } from './support.ts';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('./oz_python_client.py', import.meta.url));
const ARTIFACTS_SCRIPT = fileURLToPath(new URL('./oz_python_artifacts.py', import.meta.url));

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

describe.each(ENGINES)('official Python client reading artifacts an agent reported, on %s', (engine) => {
  let s: Awaited<ReturnType<typeof startExecServer>>;
  let python: string;
  beforeAll(async () => {
    ({ python } = await ensurePythonClient());
    s = await startExecServer(engine);
  }, 600_000);
  afterAll(async () => {
    await s?.close();
  });

  it('parses FILE, SCREENSHOT and PLAN to their models; a file downloads by its signed URL, an expired one is refused', async () => {
    const runId = await createRun(s, { prompt: 'Report ARTIFACTS_ALL', config: { harness: { type: 'command' } } });
    const item = await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR']);
    expect(item.state, JSON.stringify(item.status_message)).toBe('SUCCEEDED');
    const fileUid = item.artifacts.find((a: { artifact_type: string }) => a.artifact_type === 'FILE').data.artifact_uid;
    const key = new SecretCipher(Buffer.from(TEST_MASTER_KEY, 'hex')).deriveKey(ARTIFACT_URL_KEY_PURPOSE);
    const expired = signedDownloadUrl(s.apiUrl, key, fileUid, Date.now() - 2 * 60 * 60 * 1000);
    const { stdout } = await run(python, [ARTIFACTS_SCRIPT], {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        OZ_API_BASE_URL: s.apiUrl,
        WARP_API_KEY: s.adminKey,
        RUN_ID: runId,
        EXPIRED_URL: expired.url,
      },
      timeout: 120_000,
    }).catch((err: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(`the Python client could not read the artifacts:\n${err.stderr ?? ''}\n${err.stdout ?? ''}`);
    });
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual({ file: fileUid, downloaded: 21 });
    // The executor refused the FILE whose path leaves the workspace, with an error event naming it.
    const events = (
      await s.server.ctx.db.query<{ data: { message: string } }>(
        `SELECT data FROM run_events WHERE run_id = $1 AND type = 'error'`,
        [runId],
      )
    ).rows.map((r) => r.data.message);
    expect(events).toEqual([expect.stringMatching(/artifact \.\.\/\.\.\/outside\.txt: the path leaves the workspace/)]);
  }, 300_000);
});
