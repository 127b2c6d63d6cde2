import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { describeRunaway, rssLimitBytes, startMemoryGuard } from './memory-guard.ts';

describe('the test processes’ memory guard', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('reads its limit from AGENTYARD_TEST_RSS_LIMIT_MB, 6 GB otherwise', () => {
    expect(rssLimitBytes({ AGENTYARD_TEST_RSS_LIMIT_MB: '512' })).toBe(512 * 1024 * 1024);
    expect(rssLimitBytes({ AGENTYARD_TEST_RSS_LIMIT_MB: 'lots' })).toBe(6 * 1024 * 1024 * 1024);
    expect(rssLimitBytes({})).toBe(6 * 1024 * 1024 * 1024);
  });

  it('over its limit: names the file and the memory by kind, writes a Node report with the stacks, ends the process', async () => {
    const reportDir = mkdtempSync(path.join(tmpdir(), 'agentyard-guard-'));
    dirs.push(reportDir);
    const said: string[] = [];
    let stop: (() => void) | undefined;
    await new Promise<void>((ended) => {
      stop = startMemoryGuard({
        current: () => 'test/operator/example.test.ts',
        limitBytes: 1,
        reportDir,
        say: (text) => said.push(text),
        end: ended,
      });
    });
    stop?.();
    expect(said).toHaveLength(1);
    const text = said[0]!;
    expect(text).toMatch(/^memory guard: test process \d+ reached \d+ MB of RSS in test\/operator\/example\.test\.ts/);
    expect(text).toMatch(/V8 heap \d+ MB used of \d+ MB; external \d+ MB, of which array buffers \d+ MB/);
    expect(text).toMatch(/open: \w+ ×\d+/);
    const file = /Node report \(stacks of the process and its threads\): (.+)$/m.exec(text)?.[1];
    expect(file).toBe(path.join(reportDir, `memory-guard-${process.pid}.json`));
    const report = JSON.parse(readFileSync(file!, 'utf8')) as {
      javascriptStack: unknown;
      header: { processId: number };
    };
    expect(report.header.processId).toBe(process.pid);
    expect(report.javascriptStack).toBeDefined();
  });

  it('under its limit, says nothing', async () => {
    const said: string[] = [];
    const stop = startMemoryGuard({ current: () => undefined, say: (t) => said.push(t), end: () => said.push('end') });
    await new Promise((r) => setTimeout(r, 700));
    stop();
    expect(said).toEqual([]);
  });

  it('ends its process for real, after the exit handlers, with SIGKILL (vitest turns process.exit into an error)', () => {
    const reportDir = mkdtempSync(path.join(tmpdir(), 'agentyard-guard-'));
    dirs.push(reportDir);
    const guard = path.join(import.meta.dirname, 'memory-guard.ts');
    const script = [
      `import { startMemoryGuard } from ${JSON.stringify(guard)};`,
      "process.on('exit', () => process.stderr.write('exit handler ran\\n'));",
      `startMemoryGuard({ current: () => 'a.test.ts', limitBytes: 1, reportDir: ${JSON.stringify(reportDir)} });`,
      'setInterval(() => {}, 1000);',
    ].join('\n');
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(child.signal).toBe('SIGKILL');
    expect(child.stderr).toMatch(/memory guard: test process \d+ reached \d+ MB of RSS in a\.test\.ts/);
    expect(child.stderr).toContain('exit handler ran');
  });

  it('describes a process without a file or a report', () => {
    const text = describeRunaway(undefined, undefined);
    expect(text).not.toContain(' in ');
    expect(text).toContain('no Node report written');
  });
});
