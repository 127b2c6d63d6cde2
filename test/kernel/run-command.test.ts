/**
 * Short commands run to their end through the spawner process (src/kernel/run-command.ts): output, input and
 * exit as execFile gives them, a stop by signal, by silence or by the reader, and never a fork of this process.
 */
import { describe, expect, it } from 'vitest';
import { execCommand, failureDetail, MAX_STDERR, runCommand, succeeded } from '../../src/kernel/run-command.ts';
import type { CommandRequest } from '../../src/kernel/run-command.ts';

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

function sh(script: string, more: Partial<CommandRequest> = {}): CommandRequest {
  return { command: '/bin/sh', args: ['-c', script], cwd: '/tmp', env, blockTimeoutMs: 10_000, ...more };
}

describe('runCommand', () => {
  it('answers standard output, standard error and the exit code, with standard input written', async () => {
    const outcome = await execCommand(sh('cat; echo "$PWD" >&2; exit 3', { input: 'héllo\n' }));
    expect(outcome.stdout.toString('utf8')).toBe('héllo\n');
    expect(outcome.stderr).toBe('/tmp\n');
    expect(outcome.code).toBe(3);
    expect(succeeded(outcome)).toBe(false);
    expect(failureDetail(outcome)).toBe('/tmp');
  });

  it('starts the command from the spawner process, not as a child of this one', async () => {
    const outcome = await execCommand(sh('echo $PPID'));
    expect(succeeded(outcome)).toBe(true);
    expect(Number(outcome.stdout.toString('utf8'))).not.toBe(process.pid);
  });

  it('names a missing executable by its start error', async () => {
    const outcome = await execCommand({ ...sh(''), command: '/no/such/command' });
    expect(outcome).toMatchObject({ code: null, startError: 'ENOENT' });
    expect(succeeded(outcome)).toBe(false);
  });

  it('kills the command when its signal aborts', async () => {
    const stop = new AbortController();
    const started = Date.now();
    const running = execCommand(sh('echo started; exec sleep 30', { signal: stop.signal }));
    setTimeout(() => stop.abort(), 200);
    const outcome = await running;
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(outcome).toMatchObject({ code: null, failure: '/bin/sh echo started; exec sleep 30 was stopped' });
    expect(outcome.stdout.toString('utf8')).toBe('started\n');
  });

  it('does not start a command whose signal has already aborted', async () => {
    const stop = new AbortController();
    stop.abort();
    const outcome = await execCommand(sh('echo ran', { signal: stop.signal }));
    expect(outcome.failure).toBe('/bin/sh echo ran was stopped');
    expect(outcome.stdout.length).toBe(0);
  });

  it('kills a command that writes nothing for its block timeout', async () => {
    const outcome = await execCommand(sh('exec sleep 30', { blockTimeoutMs: 300 }));
    expect(outcome).toMatchObject({ code: null, failure: '/bin/sh exec sleep 30 timed out: no output for 0.3 s' });
  });

  it('ends the command when the reader has read enough, answering exit 0', async () => {
    let chunks = 0;
    const outcome = await runCommand(sh('exec yes'), () => ++chunks < 3);
    expect(chunks).toBe(3);
    expect(outcome.code).toBe(0);
    expect(outcome.failure).toBeUndefined();
  });

  it('keeps the start of a flood of standard error, and no more', async () => {
    const outcome = await execCommand(sh('echo first >&2; head -c 20000000 /dev/zero | tr "\\0" x >&2'));
    expect(outcome.code).toBe(0);
    expect(outcome.stderr.startsWith('first\n')).toBe(true);
    expect(outcome.stderr.length).toBeLessThanOrEqual(MAX_STDERR);
    expect(failureDetail({ ...outcome, code: 1 })).toBe('first');
  });
});
