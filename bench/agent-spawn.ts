/**
 * How long starting an agent pauses the event loop, in a process as large as a PGlite server: `AgentProcess.start`
 * (the spawner process, src/kernel/spawner.ts) against `child_process.spawn` on the event loop, in
 * alternating rounds. Prints the process's RSS and, for each, the event loop's longest delay per start (p50 and
 * max over the starts; `monitorEventLoopDelay`, 1 ms resolution) and the time a start takes.
 *
 *   node bench/agent-spawn.ts [--rss-mb 800] [--starts 20] [--rounds 3]
 */
import { spawn } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { AgentProcess } from '../src/execution/agent-process.ts';
import { fmt } from './support/stats.ts';

const { values } = parseArgs({
  options: {
    'rss-mb': { type: 'string', default: '800' },
    starts: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '3' },
  },
});
const RSS_MB = Number(values['rss-mb']);
const STARTS = Number(values.starts);
const ROUNDS = Number(values.rounds);

// Memory the way a PGlite server holds it: touched pages, whose page tables a fork copies.
const ballast: Buffer[] = [];
for (let mb = 0; mb < RSS_MB; mb += 16) ballast.push(Buffer.alloc(16 * 1024 * 1024, 1));

type Start = () => Promise<void>;

const direct: Start = () =>
  new Promise((resolve, reject) => {
    const child = spawn('/bin/true', [], { detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    child.once('error', reject);
    child.stdout.resume();
    child.stderr.resume();
    child.once('close', () => resolve());
  });

const fromSpawner: Start = async () => {
  const agent = await AgentProcess.start({
    command: '/bin/true',
    args: [],
    cwd: '/tmp',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    keepStdinOpen: false,
    onStdoutLine: () => {},
    onStderrLine: () => {},
  });
  const exit = await agent.exited;
  if (exit.spawnError) throw exit.spawnError;
};

/** Each start's longest event-loop delay (ms) and duration (ms). */
async function measure(start: Start): Promise<{ delays: number[]; durations: number[] }> {
  const delays: number[] = [];
  const durations: number[] = [];
  for (let i = 0; i < STARTS; i++) {
    const histogram = monitorEventLoopDelay({ resolution: 1 });
    histogram.enable();
    // the histogram samples from its second tick on: a pause right after enable() would go unseen
    await new Promise((resolve) => setTimeout(resolve, 5));
    const began = performance.now();
    await start();
    durations.push(performance.now() - began);
    // one more turn, so that a pause at the very end of the start is sampled too
    await new Promise((resolve) => setTimeout(resolve, 3));
    histogram.disable();
    delays.push(histogram.max / 1e6);
  }
  return { delays, durations };
}

const quantile = (values: number[], q: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};

await measure(fromSpawner); // the spawner and its listener start once
await measure(direct);
const all = {
  direct: { delays: [] as number[], durations: [] as number[] },
  spawner: { delays: [] as number[], durations: [] as number[] },
};
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, start] of round % 2 === 0
    ? ([
        ['direct', direct],
        ['spawner', fromSpawner],
      ] as const)
    : ([
        ['spawner', fromSpawner],
        ['direct', direct],
      ] as const)) {
    const m = await measure(start);
    all[name].delays.push(...m.delays);
    all[name].durations.push(...m.durations);
  }
}
const rss = process.memoryUsage().rss / 1024 / 1024;
console.log(`RSS ${fmt(rss)} MB, ${STARTS} starts × ${ROUNDS} rounds each, alternating`);
console.log('| start | event-loop delay per start: p50 | max | start → exit: p50 |');
console.log('| --- | ---: | ---: | ---: |');
for (const [name, m] of Object.entries(all))
  console.log(
    `| ${name === 'direct' ? 'child_process.spawn on the event loop' : 'AgentProcess.start (spawner process)'} | ${fmt(quantile(m.delays, 0.5))} ms | ${fmt(Math.max(...m.delays))} ms | ${fmt(quantile(m.durations, 0.5))} ms |`,
  );
console.log(
  `ratio of p50 delays (spawner / direct): ${fmt(quantile(all.spawner.delays, 0.5) / quantile(all.direct.delays, 0.5), 2)}`,
);
ballast.length = 0;
process.exit(0);
