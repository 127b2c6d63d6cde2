/**
 * Validation speed on a generated 1,000-file factory (target: ≤ 1 s end to end).
 *
 *   node bench/validate.ts [FILES]
 *
 * Prints: the time to read the tree, the first (cold: schemas compile) and warm validateFactory times,
 * and the wall time of `agentyard validate DIR` as a fresh process.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { readFactoryDir, validateFactory } from '../src/definitions/index.ts';

const total = Number(process.argv[2] ?? 1000);
const dir = mkdtempSync(join(tmpdir(), 'agentyard-bench-validate-'));

function write(path: string, content: string): void {
  mkdirSync(join(dir, path, '..'), { recursive: true });
  writeFileSync(join(dir, path), content);
}

function uid(i: number): string {
  return `wh_01jz${String(i).padStart(22, '0')}`;
}

const webhooks = 20;
const runners = Math.max(1, Math.floor(total * 0.05));
const agents = Math.max(1, Math.floor(total * 0.3));
const skills = Math.floor(total * 0.1);
const automations = total - 1 - webhooks - runners - agents - skills;

write(
  'factory.yaml',
  'schemaVersion: v1alpha1\nname: Bench\nrepositories:\n  - {owner: acme, name: api}\nsecrets: [shared]\nagentDefaults:\n  model: auto\n  runner: runner-0\n',
);
for (let i = 0; i < runners; i++) {
  write(
    `runners/runner-${i}.yaml`,
    `description: Runner ${i}\nsetupCommands:\n  - npm ci\ninstanceShape: {vcpus: 4, memoryGb: 8}\nplatform:\n  linux:\n    dockerImage: node:24\n`,
  );
}
for (let i = 0; i < agents; i++) {
  const type = i === 0 ? 'FOREMAN' : 'IMPLEMENT';
  write(
    `agents/agent-${i}/agent.md`,
    `---\nagentType: ${type}\ndescription: Agent ${i}\nrunner: runner-${i % runners}\nsecrets: [s-${i}]\nharness:\n  type: claude\n  model: opus\n  reasoningLevel: high\n---\n\n${'You are a careful engineer. '.repeat(20)}\n`,
  );
}
for (let i = 0; i < skills; i++) write(`skills/skill-${i}/SKILL.md`, `---\nname: skill-${i}\n---\nDo thing ${i}.\n`);
for (let i = 0; i < webhooks; i++)
  write(
    `webhooks/hook-${i}.yaml`,
    `authMode: signature\nsignatureScheme: github\nsecretName: hook-${i}\ndeliveryIdHeader: X-GitHub-Delivery\n`,
  );
for (let i = 0; i < automations; i++) {
  write(
    `automations/automation-${i}/automation.md`,
    `---\nagent: agent-${i % agents}\ntriggers:\n  - provider: webhook\n    event: received\n    filter:\n      webhook_ids: [${uid(i % webhooks)}]\n      payload:\n        action: [opened, reopened]\n        pull_request:\n          draft: false\n          labels: {not_in: [wip]}\n---\n\nHandle event ${i}.\n`,
  );
}

function ms(start: number): string {
  return `${(performance.now() - start).toFixed(1)} ms`;
}

try {
  let t = performance.now();
  const files = await readFactoryDir(dir);
  console.log(
    `files: ${files.length} (${agents} agents, ${automations} automations, ${runners} runners, ${webhooks} webhooks, ${skills} skills)`,
  );
  console.log(`readFactoryDir: ${ms(t)}`);
  t = performance.now();
  let result = await validateFactory(files);
  console.log(
    `validateFactory (cold, compiles schemas): ${ms(t)}  valid=${result.valid} diagnostics=${result.diagnostics.length}`,
  );
  if (!result.valid) console.log(result.diagnostics.slice(0, 5));
  const runs = 5;
  t = performance.now();
  for (let i = 0; i < runs; i++) result = await validateFactory(files);
  console.log(`validateFactory (warm, mean of ${runs}): ${((performance.now() - t) / runs).toFixed(1)} ms`);
  const bin = new URL('../bin/agentyard.js', import.meta.url).pathname;
  const walls: number[] = [];
  for (let i = 0; i < 3; i++) {
    t = performance.now();
    const cli = spawnSync(process.execPath, [bin, 'validate', dir], { encoding: 'utf8' });
    walls.push(performance.now() - t);
    if (cli.status !== 0) console.log('CLI exit', cli.status, cli.stdout.slice(0, 500), cli.stderr.slice(0, 500));
  }
  console.log(`agentyard validate (new process, end to end): ${walls.map((w) => `${w.toFixed(0)} ms`).join(', ')}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
