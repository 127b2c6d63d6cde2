/**
 * The built-in agent's overhead per turn (not a test): figures for docs/performance.md, "The built-in agent".
 *
 *   node bench/builtin-agent.ts [--turns 200] [--tool list_directory|read_file|shell]
 *
 * The agent process (src/execution/builtin-agent/main.ts) runs against the stand-in OpenAI-compatible endpoint
 * of the tests, which answers every request at once with one tool call, `--turns` times, then a final answer.
 * Per turn, the stand-in measures the time between the end of its reply and the arrival of the next request:
 * what the agent spends on its side (reading the stream, running the tool, saving the transcript, building
 * the next request). Target: p50 ≤ 5 ms with a cheap tool (`list_directory`). On Linux it also prints the agent
 * process's mean CPU time per turn (from /proc, 10 ms ticks), which the other load of a shared machine moves less.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { AGENT_SCRIPT } from '../src/execution/harnesses/agentyard.ts';
import { AGENT_RUN_FORMAT } from '../src/execution/builtin-agent/protocol.ts';
import type { AgentRunDocument } from '../src/execution/builtin-agent/protocol.ts';
import { startOpenAiStandin } from '../test/support/openai-standin.ts';
import type { StandinToolCall } from '../test/support/openai-standin.ts';

const { values } = parseArgs({
  options: { turns: { type: 'string', default: '200' }, tool: { type: 'string', default: 'list_directory' } },
});
const turns = Number(values.turns);
const calls: Record<string, StandinToolCall> = {
  list_directory: { name: 'list_directory', arguments: '{}' },
  read_file: { name: 'read_file', arguments: '{"path":"notes.txt"}' },
  shell: { name: 'shell', arguments: '{"command":"true"}' },
};
const call = calls[values.tool];
if (!call || !Number.isInteger(turns) || turns < 2) {
  console.error('usage: node bench/builtin-agent.ts [--turns N≥2] [--tool list_directory|read_file|shell]');
  process.exit(2);
}

const workspace = mkdtempSync(path.join(tmpdir(), 'agentyard-bench-agent-'));
writeFileSync(path.join(workspace, 'notes.txt'), 'x'.repeat(2_000));
let served = 0;
/** The agent's CPU time (all its threads, ms) when the 6th and the last request arrive: Linux's /proc. */
const cpu: number[] = [];
function agentCpuMs(): number {
  try {
    const fields = readFileSync(`/proc/${agent.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, USER_HZ 100
  } catch {
    return Number.NaN;
  }
}
const standin = await startOpenAiStandin(() => {
  served += 1;
  if (served === 6 || served === turns + 1) cpu.push(agentCpuMs());
  return served <= turns ? { toolCalls: [call] } : { content: 'done' };
});
const doc: AgentRunDocument = {
  format: AGENT_RUN_FORMAT,
  run_id: 'run_bench',
  execution_id: 'exe_bench',
  prompt: 'Benchmark: call the tool until told to stop.',
  run_prompt: 'Benchmark',
  base_prompt: null,
  model: 'bench',
  mcp_servers: {},
  resume_session_id: null,
  max_turns: turns + 10,
  deadline_at: Date.now() + 600_000,
  request_timeout_ms: 60_000,
  workspace,
};
const agent = spawn(process.execPath, [AGENT_SCRIPT], {
  cwd: workspace,
  env: {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: path.join(workspace, '.home'),
    AGENTYARD_OPENAI_BASE_URL: standin.baseUrl,
    AGENTYARD_OPENAI_API_KEY: 'sk-bench',
  },
  stdio: ['pipe', 'pipe', 'inherit'],
});
let results = 0;
agent.stdout.on('data', (b: Buffer) => {
  results += (b.toString().match(/"type":"result"/g) ?? []).length;
  if (results > 0) agent.stdin.end();
});
agent.stdin.write(`${JSON.stringify(doc)}\n`);
const code = await new Promise<number | null>((resolve) => agent.once('close', resolve));
await standin.close();
rmSync(workspace, { recursive: true, force: true });
if (code !== 0 || standin.requests.length !== turns + 1) {
  console.error(`the agent exited ${code} after ${standin.requests.length} requests`);
  process.exit(1);
}

// gap i: the end of reply i to the arrival of request i+1 (the first few warm up the JIT and the client)
const gaps = standin.repliedAt.slice(0, -1).map((t, i) => standin.requests[i + 1]!.receivedAt - t);
const steady = gaps.slice(5).sort((a, b) => a - b);
const pct = (p: number) => steady[Math.min(steady.length - 1, Math.floor((p / 100) * steady.length))]!;
console.log(`tool ${values.tool}, ${turns} turns (first 5 left out)`);
console.log(
  `overhead per turn: p50 ${pct(50).toFixed(2)} ms  p90 ${pct(90).toFixed(2)} ms  p99 ${pct(99).toFixed(2)} ms  max ${steady.at(-1)!.toFixed(2)} ms`,
);
const cpuPerTurn = (cpu[1]! - cpu[0]!) / (turns - 5);
if (Number.isFinite(cpuPerTurn)) console.log(`agent CPU per turn (mean, all threads): ${cpuPerTurn.toFixed(2)} ms`);
console.log(`target p50 ≤ 5 ms: ${pct(50) <= 5 ? 'met' : 'NOT met'}`);
