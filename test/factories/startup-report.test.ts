/**
 * `agentyard serve --factory DIR`, the local loop, as a real process: a refused save is printed on stderr as
 * `file:line:col` lines (as `agentyard validate` prints them) with a summary, and the fix as applied; its
 * start-up lines count migrations and free-space maps instead of naming each.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnAgentyard } from '../support/agentyard-process.ts';
import type { AgentyardProcess } from '../support/agentyard-process.ts';
import { baseFiles } from '../support/factory-tree.ts';
import { TEST_MASTER_KEY } from '../support/server.ts';

const HOOK = 'webhooks/ci.yaml';

describe('serve --factory DIR reports each apply on stderr', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'agentyard-loop-'));
  let serve: AgentyardProcess;

  const write = async (file: string, content: string) => {
    await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
    await writeFile(path.join(dir, file), content);
  };
  /** The process prints `text`: waits on its output, never on a timer. */
  const printed = (text: string) =>
    serve.printed(
      new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')),
      `serve to print ${JSON.stringify(text)}`,
      120_000,
    );

  beforeAll(async () => {
    for (const [file, content] of Object.entries(baseFiles())) await write(file, content);
    await write(HOOK, 'authMode: tokn\nsecretName: ci\n');
    serve = spawnAgentyard(['serve', '--factory', dir, '--port', '0'], {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      HOST: '127.0.0.1',
      AGENTYARD_MASTER_KEY: TEST_MASTER_KEY,
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
    });
  });
  afterAll(async () => {
    await serve?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints a refused tree as file:line:col lines, then the fix as applied', async () => {
    const name = path.basename(dir);
    await printed(
      `${HOOK}:1:11: error FF_INVALID_VALUE: \`authMode\` must be one of \`token\`, \`url_token\`, \`signature\` (got "tokn"); did you mean \`token\`?\n`,
    );
    await printed(`factory ${name}: refused directory@sha256:`);
    expect(serve.output()).toMatch(/\(1 error, 0 warnings\); nothing applied yet\n/);
    // The start-up lines say how many migrations and free-space maps, not the name of each.
    await printed('"freeSpaceMaps":');
    expect(serve.output()).toMatch(/"applied":\d+,"current":"\d{4}_\w+","msg":"database migrated to \d{4}_\w+"/);
    expect(serve.output()).not.toContain('0001_identity');
    expect(serve.output()).not.toContain('runs_pkey');

    // The fix: this process has no managed secret for the webhook, so the webhook goes.
    await rm(path.join(dir, HOOK));
    await printed(`factory ${name}: applied directory@sha256:`);
  }, 300_000);
});
