import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEPLOYMENT_NOTES } from '../../src/factories/apply/deployment-notes.ts';
import { ENGINES } from '../support/db.ts';
import { baseFiles, factoryYaml } from '../support/factory-tree.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

const SCORER = `---
agents: [foreman]
labels:
  - value: good
    score: 1
  - value: bad
    score: 0
passingScore: 0.5
model: auto
---

Is the triage right?
`;

const RUNNERS = {
  'runners/default.yaml': `platform:
  os: linux
  linux:
    dockerImage: node:24-bookworm
setupCommands:
  - npm ci
instanceShape:
  vcpus: 4
  memoryGb: 8
`,
  'runners/mac.yaml': `platform:
  os: macos
  mac:
    version: "26"
`,
};

describe.each(ENGINES)('settings this deployment accepts without acting on them, on %s', (engine) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(engine);
  });
  afterAll(async () => {
    await s?.close();
  });

  it('warns at validate where each is set, saying what the deployment does with it; the tree stays valid', async () => {
    const files = {
      ...baseFiles(),
      'factory.yaml': `${factoryYaml()}credentialStrategy: EXECUTOR\n`,
      ...RUNNERS,
      'scorers/triage/scorer.md': SCORER,
    };
    const res = await s.api('POST', '/factory-files/validate', {
      files: Object.entries(files).map(([path, content]) => ({ path, content })),
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.valid, JSON.stringify(res.body.diagnostics)).toBe(true);
    const notes = (res.body.diagnostics as { code: string; path: string; line: number; message: string }[])
      .filter((d) => d.code === 'FF_NOT_SUPPORTED_HERE')
      .map((d) => [d.path, d.line, d.message]);
    expect(notes).toEqual(
      expect.arrayContaining([
        ['runners/default.yaml', 5, DEPLOYMENT_NOTES.runnerSetupCommands],
        ['runners/default.yaml', 7, DEPLOYMENT_NOTES.runnerInstanceShape],
        ['runners/mac.yaml', 2, DEPLOYMENT_NOTES.macosRunner],
      ]),
    );
    // credentialStrategy acts (docs/integrations.md § Credentials out), and scorers judge runs: no note.
    expect(notes).toHaveLength(3);
    expect(res.body.diagnostics.every((d: { severity: string }) => d.severity === 'warning')).toBe(true);
  });
});
