/**
 * A test process whose memory runs away is ended by this guard, with a report, before the kernel's OOM killer
 * ends it (or another process of the suite) without a word: the guard names the file, the memory by kind,
 * the handles still open, and writes Node's diagnostic report (the JavaScript stacks of the process and of its
 * threads) beside the suite's results. A test process of this suite stays near 1 GB.
 */
import { mkdirSync, writeSync } from 'node:fs';
import path from 'node:path';

const DEFAULT_LIMIT_MB = 6 * 1024;
const CHECK_EVERY_MS = 500;
const MB = 1024 * 1024;

export interface MemoryGuardOptions {
  /** What the process runs now (a test file), for the report. */
  current: () => string | undefined;
  limitBytes?: number;
  /** Where the report goes; `.test-results` of this checkout by default. */
  reportDir?: string;
  /** What ends the process; `endProcess` by default. */
  end?: () => void;
  /** Where the account goes; standard error by default. */
  say?: (text: string) => void;
}

/** The RSS limit: AGENTYARD_TEST_RSS_LIMIT_MB, else 6 GB. */
export function rssLimitBytes(env: NodeJS.ProcessEnv = process.env): number {
  const mb = Number(env.AGENTYARD_TEST_RSS_LIMIT_MB);
  return (Number.isFinite(mb) && mb > 0 ? mb : DEFAULT_LIMIT_MB) * MB;
}

/** What the guard says when it ends a process: one line per fact, for a CI log. */
export function describeRunaway(current: string | undefined, reportFile: string | undefined): string {
  const usage = process.memoryUsage();
  const mb = (n: number) => `${Math.round(n / MB)} MB`;
  const resources = new Map<string, number>();
  for (const kind of process.getActiveResourcesInfo()) resources.set(kind, (resources.get(kind) ?? 0) + 1);
  return [
    `memory guard: test process ${process.pid} reached ${mb(usage.rss)} of RSS${current ? ` in ${current}` : ''}`,
    `  V8 heap ${mb(usage.heapUsed)} used of ${mb(usage.heapTotal)}; external ${mb(usage.external)}, of which array buffers ${mb(usage.arrayBuffers)}`,
    `  off the main heap (threads, WebAssembly, native): ${mb(usage.rss - usage.heapTotal - usage.external)}`,
    `  open: ${[...resources].map(([kind, n]) => `${kind} ×${n}`).join(', ') || 'nothing'}`,
    reportFile ? `  Node report (stacks of the process and its threads): ${reportFile}` : '  no Node report written',
    '',
  ].join('\n');
}

/**
 * Ends this process at once. vitest replaces `process.exit` in its workers with an error that leaves the process
 * running, so: the `exit` handlers (the API servers a test started, test/operator/k8s.ts), then SIGKILL.
 */
export function endProcess(): void {
  process.emit('exit', 70);
  process.kill(process.pid, 'SIGKILL');
}

/** Starts the guard; answers the function that stops it. */
export function startMemoryGuard(options: MemoryGuardOptions): () => void {
  const limit = options.limitBytes ?? rssLimitBytes();
  const reportDir = options.reportDir ?? path.resolve(import.meta.dirname, '../../.test-results');
  const end = options.end ?? endProcess;
  const say = options.say ?? ((text: string) => writeSync(2, text));
  const timer = setInterval(() => {
    if (process.memoryUsage.rss() < limit) return;
    clearInterval(timer);
    let reportFile: string | undefined;
    try {
      mkdirSync(reportDir, { recursive: true });
      // no reverse DNS lookups of the sockets' addresses (@types/node lacks the property)
      (process.report as { excludeNetwork?: boolean }).excludeNetwork = true;
      reportFile = process.report.writeReport(path.join(reportDir, `memory-guard-${process.pid}.json`));
    } catch {
      reportFile = undefined;
    }
    say(describeRunaway(options.current(), reportFile));
    end();
  }, CHECK_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
