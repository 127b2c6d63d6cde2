import { parseArgs } from 'node:util';
import { benchmarkTable } from '../scoring/benchmarks.ts';
import type { BenchmarkRunView } from '../scoring/benchmarks.ts';
import { CliError, SERVER_OPTIONS, ServerClient, describeProblem, reportCliError, usageShown } from './plan.ts';

const USAGE = `Usage: agentyard bench run SUITE --factory NAME [--judge-model ID] [--no-wait] [--timeout SECONDS]
                       [--server URL] [--key KEY] [--json]
       agentyard bench compare SUITE --factory NAME [--server URL] [--key KEY] [--json]

run: runs every task of benchmarks/SUITE of the factory's applied definition as a run of the suite's agent,
waits for each to be judged against its success criteria, and prints a table: task, passed, score,
duration, usage. compare: the suite's last two benchmark runs side by side (two revisions of the agent).
The server and key come from --server/--key or AGENTYARD_URL/AGENTYARD_API_KEY.
Exit status: 0 every task passed, 1 a task failed, 2 usage or connection problem.`;

const POLL_MS = 2_000;

export async function benchCommand(argv: string[]): Promise<number> {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        ...SERVER_OPTIONS,
        'judge-model': { type: 'string' },
        'no-wait': { type: 'boolean' },
        timeout: { type: 'string' },
      },
    });
    if (values.help) return usageShown(USAGE);
    const [action, suite] = positionals;
    if ((action !== 'run' && action !== 'compare') || !suite || positionals.length !== 2 || !values.factory)
      throw new CliError(USAGE);
    const timeoutS = values.timeout === undefined ? 3600 : Number(values.timeout);
    if (!Number.isInteger(timeoutS) || timeoutS < 1) throw new CliError('--timeout must be a whole number of seconds');
    const client = new ServerClient(values.server, values.key);
    const id = await client.factoryId(values.factory);
    const base = `/factories/${id}/benchmarks/${encodeURIComponent(suite)}/runs`;
    if (action === 'compare') {
      const res = await client.call<{ runs: BenchmarkRunView[] }>('GET', `${base}?limit=2`);
      if (res.status !== 200) throw new CliError(`bench compare ${suite}: ${describeProblem(res.status, res.body)}`);
      if (values.json) process.stdout.write(`${JSON.stringify(res.body, null, 2)}\n`);
      else process.stdout.write(`${compareTable(res.body.runs.slice().reverse())}\n`);
      return 0;
    }
    const started = await client.call<BenchmarkRunView>(
      'POST',
      base,
      values['judge-model'] ? { judge_model: values['judge-model'] } : {},
    );
    if (started.status !== 200)
      throw new CliError(`bench run ${suite}: ${describeProblem(started.status, started.body)}`);
    let view = started.body;
    const deadline = Date.now() + timeoutS * 1000;
    while (!values['no-wait'] && view.state !== 'done') {
      if (Date.now() > deadline)
        throw new CliError(`bench run ${suite}: not done after ${timeoutS} s (benchmark run ${view.id})`, 1);
      await new Promise((r) => setTimeout(r, POLL_MS));
      const res = await client.call<BenchmarkRunView>('GET', `/factories/${id}/benchmark-runs/${view.id}`);
      if (res.status !== 200) throw new CliError(`bench run ${suite}: ${describeProblem(res.status, res.body)}`);
      view = res.body;
    }
    process.stdout.write(values.json ? `${JSON.stringify(view, null, 2)}\n` : `${benchmarkTable(view)}\n`);
    return view.state === 'done' && view.passed < view.tasks.length ? 1 : 0;
  } catch (err) {
    return reportCliError('bench', err);
  }
}

/** Benchmark runs side by side: one row per task, one column per run (its revision). */
export function compareTable(runs: readonly BenchmarkRunView[]): string {
  if (runs.length === 0) return 'no benchmark runs of this suite yet';
  const tasks = [...new Set(runs.flatMap((r) => r.tasks.map((t) => t.task)))];
  const header = ['task', ...runs.map((r) => (r.revision ?? r.id).slice(0, 24))];
  const cell = (r: BenchmarkRunView, task: string) => {
    const t = r.tasks.find((x) => x.task === task);
    if (!t) return '-';
    if (t.state === 'pending') return '…';
    return `${t.passed ? 'pass' : 'fail'} ${t.duration_ms === null ? '' : `${(t.duration_ms / 1000).toFixed(1)}s`}`.trim();
  };
  const rows = [
    ...tasks.map((task) => [task, ...runs.map((r) => cell(r, task))]),
    ['passed', ...runs.map((r) => `${r.passed}/${r.tasks.length}`)],
  ];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}
