/**
 * Before/after comparison of two revisions on the benchmarks whose targets are in docs/performance.md.
 *
 *   node bench/compare-revisions.ts [--before REV] [--after REV] [--rounds 2] [--quick]
 *                                   [--benches validate,push-to-live,run-api,ingress,execution]
 *
 * Exports each revision into a temporary directory (`git archive`, node_modules symlinked to this checkout's),
 * then runs every benchmark on both in alternating order (A B, B A, A B …) so that the machine's drift hits
 * both alike, parses each benchmark's own report and prints, for every target metric, the median of the rounds
 * before and after, the ratio after / before and whether the after figure meets the target.
 * `--before` defaults to the commit before the restructure's first step ("Kernel without Fastify").
 */
import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fmt } from './support/stats.ts';

const { values } = parseArgs({
  options: {
    before: { type: 'string' },
    after: { type: 'string', default: 'HEAD' },
    rounds: { type: 'string', default: '2' },
    quick: { type: 'boolean', default: false },
    benches: { type: 'string', default: 'validate,push-to-live,run-api,ingress,execution' },
  },
});
const ROOT = new URL('../', import.meta.url).pathname;
const ROUNDS = Math.max(1, Number(values.rounds));
const QUICK = values.quick;

/** A figure a benchmark prints, the direction that is better, and its target in docs/performance.md. */
interface Metric {
  name: string;
  better: 'higher' | 'lower';
  /** Whether a figure meets the target; undefined when the metric has none of its own. */
  target?: { text: string; met: (value: number) => boolean };
}

interface Bench {
  name: string;
  args: string[];
  /** Metric name → value, from the benchmark's stdout. */
  parse(stdout: string): Map<string, number>;
  metrics: Metric[];
  timeoutMs: number;
}

const num = (s: string) => Number(s.replaceAll(',', ''));
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const atLeast = (t: number) => ({ text: `≥ ${t}`, met: (v: number) => v >= t });
const atMost = (t: number, unit = '') => ({ text: `≤ ${t}${unit}`, met: (v: number) => v <= t });

const INGRESS_MODES = [
  ['token', 'token', 0.4],
  ['Standard Webhooks signature', 'standard-webhooks', 0.3],
] as const;

const BENCHES: Bench[] = [
  {
    name: 'validate',
    args: ['bench/validate.ts', '1000'],
    timeoutMs: 5 * 60_000,
    metrics: [
      { name: 'validate: agentyard validate of 1,000 files, ms (median of 3)', better: 'lower', target: atMost(1000) },
      { name: 'validate: validateFactory warm, ms', better: 'lower' },
    ],
    parse(out) {
      const m = new Map<string, number>();
      const walls = /agentyard validate \(new process, end to end\): (.+)/.exec(out)?.[1];
      if (walls) m.set(this.metrics[0]!.name, median([...walls.matchAll(/([\d,.]+) ms/g)].map((x) => num(x[1]!))));
      const warm = /validateFactory \(warm, mean of \d+\): ([\d,.]+) ms/.exec(out)?.[1];
      if (warm) m.set(this.metrics[1]!.name, num(warm));
      return m;
    },
  },
  {
    name: 'push-to-live',
    args: ['bench/push-to-live.ts', QUICK ? '8' : '20'],
    timeoutMs: 10 * 60_000,
    metrics: [
      { name: 'push-to-live: push → live p50 with a push notification, ms', better: 'lower', target: atMost(1000) },
      { name: 'push-to-live: push → live p50 with POST /sync, ms', better: 'lower' },
    ],
    parse(out) {
      const m = new Map<string, number>();
      const live = (header: RegExp) => {
        const block = out.split(/\n(?=push \+ )/).find((b) => header.test(b));
        const p50 = block && /push → webhook row live\s+p50\s+([\d,.]+) ms/.exec(block)?.[1];
        return p50 ? num(p50) : undefined;
      };
      const hook = live(/^push \+ push notification/);
      const sync = live(/^push \+ POST \/sync/);
      if (hook !== undefined) m.set(this.metrics[0]!.name, hook);
      if (sync !== undefined) m.set(this.metrics[1]!.name, sync);
      return m;
    },
  },
  {
    name: 'run-api',
    args: ['bench/run-api.ts', '--skip-list', '--rounds', QUICK ? '1' : '3', '--duration', QUICK ? '3' : '6'],
    timeoutMs: 15 * 60_000,
    metrics: ['pglite', 'postgres'].map((engine) => ({
      name: `run-api: run creation on ${engine}, ratio to bare node:http`,
      better: 'higher' as const,
      target: atLeast(0.35),
    })),
    parse(out) {
      const m = new Map<string, number>();
      for (const row of out.matchAll(/^\| Agentyard on (pglite|postgres) \|.*$/gm)) {
        const cells = row[0].split('|').map((c) => c.trim());
        // | Server | rps | range | p50 | p99 | non-2xx | errors | ratio (median) | ratios |
        m.set(`run-api: run creation on ${row[1]}, ratio to bare node:http`, num(cells[8]!));
      }
      return m;
    },
  },
  {
    name: 'ingress',
    args: ['bench/ingress.ts', '--skip-rss', '--rounds', QUICK ? '1' : '3', '--duration', QUICK ? '3' : '6'],
    timeoutMs: 20 * 60_000,
    metrics: ['pglite', 'postgres'].flatMap((engine) =>
      INGRESS_MODES.map(([, mode, target]) => ({
        name: `ingress: ${mode} on ${engine}, ratio to bare node:http`,
        better: 'higher' as const,
        target: atLeast(target),
      })),
    ),
    parse(out) {
      const m = new Map<string, number>();
      for (const row of out.matchAll(/^\| (pglite|postgres) \| ([^|]+?) \|.*\*\*([\d.,]+)\*\* \(target ≥/gm)) {
        const mode = INGRESS_MODES.find(([label]) => label === row[2])?.[1];
        if (mode) m.set(`ingress: ${mode} on ${row[1]}, ratio to bare node:http`, num(row[3]!));
      }
      return m;
    },
  },
  {
    name: 'execution',
    args: [
      'bench/execution.ts',
      '--engines',
      'postgres',
      '--samples',
      QUICK ? '60' : '300',
      '--rounds',
      QUICK ? '2' : '6',
      '--runs',
      QUICK ? '3000' : '20000',
    ],
    timeoutMs: 20 * 60_000,
    metrics: [
      {
        name: 'execution: enqueue → claimed p50, ratio to graphile-worker',
        better: 'lower',
        target: { text: '< 1', met: (v) => v < 1 },
      },
      { name: 'execution: drain on PostgreSQL, runs/s', better: 'higher', target: atLeast(1000) },
    ],
    parse(out) {
      const m = new Map<string, number>();
      const ratio = /^\| enqueue → the executor has it [^|]*\|[^|]*\|[^|]*\| ([\d.,]+) \|/m.exec(out)?.[1];
      if (ratio) m.set(this.metrics[0]!.name, num(ratio));
      const drain = /^\| Agentyard on postgres \(noop harness[^|]*\| [\d,]+ \| [\d.,]+ \| ([\d,]+) \|/m.exec(out)?.[1];
      if (drain) m.set(this.metrics[1]!.name, num(drain));
      return m;
    },
  },
];

function git(...args: string[]): string {
  return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
}

/** The parent of the oldest commit whose subject starts the restructure. */
function restructureBase(): string {
  const first = git('log', '--reverse', '--format=%H', '--grep=^Kernel without Fastify', 'HEAD').split('\n')[0];
  if (!first) throw new Error('no "Kernel without Fastify" commit in history: pass --before REV');
  return git('rev-parse', `${first}^`);
}

/** The tree of a revision in a temporary directory, with this checkout's node_modules. */
function exportRevision(rev: string, label: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), `agentyard-compare-${label}-`));
  execFileSync('sh', ['-c', `git archive --format=tar "$1" | tar -x -C "$2"`, 'sh', rev, dir], { cwd: ROOT });
  symlinkSync(realpathSync(path.join(ROOT, 'node_modules')), path.join(dir, 'node_modules'));
  return dir;
}

function runBench(dir: string, bench: Bench): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, bench.args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), bench.timeoutMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(stdout);
      else reject(new Error(`${bench.name} in ${dir} ended ${signal ?? code}:\n${stderr.slice(-2000)}`));
    });
  });
}

const wanted = new Set(values.benches.split(',').map((s) => s.trim()));
const benches = BENCHES.filter((b) => wanted.has(b.name));
const beforeRev = git('rev-parse', values.before ?? restructureBase());
const afterRev = git('rev-parse', values.after);
const sides = [
  { label: 'before', rev: beforeRev, dir: exportRevision(beforeRev, 'before') },
  { label: 'after', rev: afterRev, dir: exportRevision(afterRev, 'after') },
] as const;
console.log(`before ${beforeRev.slice(0, 10)} (${git('log', '-1', '--format=%s', beforeRev)})`);
console.log(`after  ${afterRev.slice(0, 10)} (${git('log', '-1', '--format=%s', afterRev)})`);
console.log(`${ROUNDS} alternating rounds${QUICK ? ', quick sizes' : ''}: ${benches.map((b) => b.name).join(', ')}\n`);

/** metric → side → one value per round */
const figures = new Map<string, { before: number[]; after: number[] }>();
const failures: string[] = [];
try {
  for (const bench of benches) {
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? sides : ([sides[1], sides[0]] as const);
      for (const side of order) {
        const started = Date.now();
        try {
          const found = bench.parse(await runBench(side.dir, bench));
          for (const metric of bench.metrics) {
            const value = found.get(metric.name);
            if (value === undefined) {
              failures.push(`${bench.name} (${side.label}): no figure for "${metric.name}"`);
              continue;
            }
            const entry = figures.get(metric.name) ?? { before: [], after: [] };
            entry[side.label].push(value);
            figures.set(metric.name, entry);
          }
        } catch (err) {
          failures.push((err as Error).message);
        }
        console.error(
          `${bench.name} round ${round + 1} ${side.label}: ${((Date.now() - started) / 1000).toFixed(0)} s`,
        );
      }
    }
  }
} finally {
  for (const side of sides) rmSync(side.dir, { recursive: true, force: true });
}

console.log('| metric | before | after | after / before | better is | target | after meets it |');
console.log('| --- | ---: | ---: | ---: | --- | --- | --- |');
for (const metric of benches.flatMap((b) => b.metrics)) {
  const entry = figures.get(metric.name);
  if (!entry?.before.length || !entry.after.length) {
    console.log(`| ${metric.name} | – | – | – | ${metric.better} | ${metric.target?.text ?? ''} | no figure |`);
    continue;
  }
  const before = median(entry.before);
  const after = median(entry.after);
  const met = metric.target ? (metric.target.met(after) ? 'yes' : '**no**') : '';
  console.log(
    `| ${metric.name} | ${fmt(before, 2)} | ${fmt(after, 2)} | **${fmt(after / before, 2)}** | ${metric.better} | ${metric.target?.text ?? ''} | ${met} |`,
  );
}
if (failures.length) {
  console.log(`\n${failures.length} problem(s):\n${failures.map((f) => `- ${f}`).join('\n')}`);
  process.exitCode = 1;
}
