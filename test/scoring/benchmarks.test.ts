/**
 * A benchmark suite of two tasks end to end: `agentyard bench run` (the real CLI, against a server on loopback)
 * starts each task as a run of the suite's agent on the built-in agent, a judge scores each against its
 * success criteria (both on a stand-in OpenAI-compatible endpoint), the table shows task, passed, score,
 * duration and usage, and a second revision of the agent compares side by side with the first.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fastSettings } from '../execution/support.ts';
import { afterPasses } from '../support/signals.ts';
import { startOpenAiStandin, textOf } from '../support/openai-standin.ts';
import type { OpenAiStandin, StandinRequest } from '../support/openai-standin.ts';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Real repositories under `<base>/OWNER/REPO.git`, each with two commits: answers the first one's id. */
function makeRepository(
  base: string,
  owner: string,
  name: string,
  file: string,
  first: string,
  second: string,
): string {
  const work = mkdtempSync(path.join(tmpdir(), 'ay-bench-src-'));
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: work })
      .toString()
      .trim();
  git('init', '--quiet', '-b', 'main');
  writeFileSync(path.join(work, file), first);
  git('add', '.');
  git('commit', '--quiet', '-m', 'first');
  const sha = git('rev-parse', 'HEAD');
  writeFileSync(path.join(work, file), second);
  git('commit', '--quiet', '-am', 'second');
  execFileSync('git', ['clone', '--quiet', '--bare', work, path.join(base, owner, `${name}.git`)]);
  rmSync(work, { recursive: true, force: true });
  return sha;
}

const GIT_BASE = mkdtempSync(path.join(tmpdir(), 'ay-bench-git-'));
const API_SHA = makeRepository(GIT_BASE, 'acme', 'api', 'hello.txt', 'api at the first commit\n', 'api later\n');
const DOCS_SHA = makeRepository(GIT_BASE, 'acme', 'docs', 'guide.md', 'teh guide\n', 'the guide\n');
afterAll(() => rmSync(GIT_BASE, { recursive: true, force: true }));
/** The file each task's agent reads in its checkout. */
const READS: Record<string, string> = { README: 'api/hello.txt', typo: 'docs/guide.md' };

function files(agentPrompt: string): { path: string; content: string }[] {
  const tree: Record<string, string> = {
    'factory.yaml': `name: Bench
repositories:
  - {owner: acme, name: api}
agentDefaults:
  harness: {type: agentyard, model: auto}
  runner: linux
`,
    'runners/linux.yaml': 'platform:\n  linux:\n    dockerImage: node:24\n',
    'agents/foreman/agent.md': '---\nagentType: FOREMAN\n---\nLead.\n',
    'agents/fixer/agent.md': `---\ndescription: Fixes bugs.\n---\n${agentPrompt}\n`,
    'benchmarks/smoke/suite.yaml': 'name: Smoke\nagent: fixer\ntasks: [add-readme, fix-typo]\n',
    'benchmarks/smoke/tasks/add-readme.yaml': `title: Add a README
prompt: Write README.md saying hello.
successCriteria: README.md exists and says hello.
startingRepoRefs: ["github.com:acme/api@${API_SHA}"]
`,
    'benchmarks/broken/suite.yaml': 'name: Broken\nagent: fixer\ntasks: [gone]\n',
    'benchmarks/broken/tasks/gone.yaml': `title: Start from a missing repository
prompt: Anything.
successCriteria: Anything.
startingRepoRefs: ["github.com:acme/missing@${API_SHA}"]
`,
    'benchmarks/smoke/tasks/fix-typo.yaml': `title: Fix a typo
prompt: Fix the typo in docs.
successCriteria: The typo is fixed.
startingRepoRefs: ["github.com:acme/docs@${DOCS_SHA}"]
`,
  };
  return Object.entries(tree).map(([p, content]) => ({ path: p, content }));
}

function isJudge(req: StandinRequest): boolean {
  return textOf(req.messages[0]).startsWith("You are a judge of an AI agent's work");
}

function cli(s: TestServer, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(ROOT, 'bin/agentyard.js'), ...args, '--server', s.url, '--key', s.adminKey],
      { timeout: 120_000, env: { PATH: process.env.PATH ?? '' } },
      (err, stdout, stderr) =>
        resolve({
          code: err ? ((err as { code?: number }).code ?? 1) : 0,
          stdout: String(stdout),
          stderr: String(stderr),
        }),
    );
  });
}

describe.each(ENGINES)('benchmarks on %s', (engine) => {
  let s: TestServer;
  let model: OpenAiStandin;
  let factoryId: string;
  /** The second revision of the agent fixes typos too. */
  let typoFixed = false;

  beforeAll(async () => {
    model = await startOpenAiStandin((req) => {
      if (isJudge(req)) {
        const material = textOf(req.messages[1]);
        const criteria = textOf(req.messages[0]);
        const pass = criteria.includes('README.md exists') ? material.includes('wrote README') : typoFixed;
        return {
          content: JSON.stringify({
            label: pass ? 'pass' : 'fail',
            reason: pass ? 'criteria met' : 'typo still there',
          }),
        };
      }
      const prompt = textOf(req.messages.find((m) => m.role === 'user'));
      const task = prompt.includes('README') ? 'README' : 'typo';
      const tool = req.messages.find((m) => m.role === 'tool');
      // each task's agent reads a file of its checkout, and says what it saw
      if (!tool)
        return {
          toolCalls: [{ name: 'read_file', arguments: JSON.stringify({ path: READS[task] }) }],
          usage: { prompt_tokens: 50, completion_tokens: 5 },
        };
      const saw = textOf(tool).trim();
      return {
        content: task === 'README' ? `I wrote README.md. Saw: ${saw}` : `Looked at the docs. Saw: ${saw}`,
        usage: { prompt_tokens: 70, completion_tokens: 9 },
      };
    });
    s = await startTestServer(engine, {
      compose: {
        execution: {
          env: {},
          settings: fastSettings({
            harnesses: ['agentyard'],
            defaultHarness: 'agentyard',
            builtin: {
              baseUrl: model.baseUrl,
              apiKey: 'sk-bench-0123456789',
              model: 'local-model',
              maxTurns: 10,
              deadlineMs: 60_000,
              requestTimeoutMs: 30_000,
            },
            repositories: {
              baseUrls: { 'github.com': `file://${GIT_BASE}`, 'gitlab.com': `file://${GIT_BASE}` },
            },
          }),
        },
        scoring: {
          judge: {
            baseUrl: model.baseUrl,
            apiKey: 'sk-bench-0123456789',
            defaultModel: 'local-judge',
            timeoutMs: 20_000,
          },
          settleMs: 50,
          pollIntervalMs: 200,
        },
      },
    });
    const factory = await s.api('POST', '/factories', { name: 'bench', source: { type: 'managed' } });
    factoryId = factory.body.id;
    const applied = await s.api('POST', `/factories/${factoryId}/apply`, { files: files('Fix bugs.'), message: 'v1' });
    expect(applied.status, applied.text).toBe(200);
  });
  afterAll(async () => {
    await s?.close();
    await model?.close();
  });

  it('runs a suite of two tasks, judges each, prints the table, and compares two revisions', async () => {
    const first = await cli(s, ['bench', 'run', 'smoke', '--factory', 'bench']);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(1); // a task failed
    const lines = first.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^task\s+passed\s+score\s+duration\s+usage$/);
    expect(lines[1]).toMatch(/^add-readme\s+yes\s+1\s+\d+\.\ds\s+120 in \/ 14 out$/);
    expect(lines[2]).toMatch(/^fix-typo\s+no\s+0\s+\d+\.\ds\s+120 in \/ 14 out$/);
    expect(first.stdout).toContain('1/2 passed · suite smoke · agent fixer');

    // each task ran as a run of the suite's agent, in a workspace with its repository checked out at its ref
    const runs = await s.server.ctx.db.query<{ prompt: string; config_name: string; result: string | null }>(
      `SELECT prompt, config_name,
              (SELECT data->>'text' FROM run_events e WHERE e.run_id = r.id AND e.type = 'result'
                ORDER BY sequence DESC LIMIT 1) AS result
         FROM runs r WHERE metadata->>'agentyard_benchmark' = 'smoke' ORDER BY created_at`,
    );
    expect(runs.rows.map((r) => r.config_name)).toEqual(['fixer', 'fixer']);
    expect(runs.rows[0]!.prompt).toContain(`- github.com:acme/api@${API_SHA}`);
    expect(runs.rows[0]!.result).toContain('Saw: api at the first commit');
    expect(runs.rows[1]!.result).toContain('Saw: teh guide');

    typoFixed = true;
    const v2 = await s.api('POST', `/factories/${factoryId}/apply`, {
      files: files('Fix bugs and typos.'),
      message: 'v2',
    });
    expect(v2.status, v2.text).toBe(200);
    const second = await cli(s, ['bench', 'run', 'smoke', '--factory', 'bench', '--json']);
    expect(second.code).toBe(0);
    const view = JSON.parse(second.stdout);
    expect(view).toMatchObject({
      state: 'done',
      passed: 2,
      suite: 'smoke',
      agent: 'fixer',
      judge_model: 'local-judge',
    });
    expect(view.tasks.map((t: { task: string; passed: boolean }) => [t.task, t.passed])).toEqual([
      ['add-readme', true],
      ['fix-typo', true],
    ]);

    const listed = await s.api('GET', `/factories/${factoryId}/benchmarks/smoke/runs`);
    expect(listed.status).toBe(200);
    const [newer, older] = listed.body.runs;
    expect(newer.revision).not.toBe(older.revision);
    const compare = await cli(s, ['bench', 'compare', 'smoke', '--factory', 'bench']);
    expect(compare.code).toBe(0);
    const table = compare.stdout.trim().split('\n');
    expect(table[0]).toContain(older.revision.slice(0, 24));
    expect(table[0]).toContain(newer.revision.slice(0, 24));
    expect(table[1]).toMatch(/^add-readme\s+pass \d+\.\ds\s+pass \d+\.\ds$/);
    expect(table[2]).toMatch(/^fix-typo\s+fail \d+\.\ds\s+pass \d+\.\ds$/);
    expect(table[3]).toMatch(/^passed\s+1\/2\s+2\/2$/);
  });

  it('ends a task whose repository cannot be checked out with a run error naming the ref', async () => {
    const started = await s.api('POST', `/factories/${factoryId}/benchmarks/broken/runs`, {});
    expect(started.status, started.text).toBe(200);
    // the scoring runner's passes judge the finished tasks of benchmark runs
    const done = await afterPasses(
      s.server.services.scoring!.loop,
      async () => {
        const view = await s.api('GET', `/factories/${factoryId}/benchmark-runs/${started.body.id}`);
        return view.body.state === 'done' ? view.body : undefined;
      },
      { what: 'the benchmark run to be done', timeoutMs: 60_000 },
    );
    expect(done.tasks[0]).toMatchObject({ task: 'gone', state: 'unscored', run_state: 'ERROR', passed: false });
    expect(done.tasks[0].reason).toContain(
      `the run ended ERROR: the starting repositories could not be checked out: github.com:acme/missing@${API_SHA}: could not check out ${API_SHA} from file://`,
    );
  });

  it('answers 404 for an unknown suite and 400 for a bad body', async () => {
    const res = await s.api('POST', `/factories/${factoryId}/benchmarks/nope/runs`, {});
    expect(res.status).toBe(404);
    expect(res.body.detail).toContain('no benchmark suite "nope"');
    const bad = await s.api('POST', `/factories/${factoryId}/benchmarks/smoke/runs`, { judge_model: 42 });
    expect(bad.status).toBe(400);
    const unknown = await cli(s, ['bench', 'run', 'smoke', '--factory', 'missing']);
    expect(unknown.code).toBe(2);
  });
});
