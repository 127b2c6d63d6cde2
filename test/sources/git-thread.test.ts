import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isMainThread } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';
import { git, gitCommand, readBlobs } from '../../src/sources/git-exec.ts';
import { gitOnThread } from '../../src/sources/git-thread.ts';

const scratch = mkdtempSync(path.join(tmpdir(), 'agentyard-git-thread-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('git commands on the git thread', () => {
  it('answers standard output, and fails with git standard error', async () => {
    const dir = path.join(scratch, 'repo.git');
    await git(scratch, ['init', '--bare', '--quiet', dir]);
    const blob = (await gitOnThread(gitCommand(dir, ['hash-object', '-w', '--stdin'], {}, 'name: x\n')))
      .toString()
      .trim();
    expect(blob).toMatch(/^[0-9a-f]{40}$/);
    expect(await readBlobs(dir, [blob, '0'.repeat(40)])).toEqual(new Map([[blob, 'name: x\n']]));
    await expect(git(dir, ['rev-parse', '--verify', 'no-such-branch'])).rejects.toThrow(
      /fatal: Needed a single revision/,
    );
  });

  it('spawns git from a thread other than this one, with the environment it is given', async () => {
    expect(isMainThread).toBe(true);
    const out = await git(scratch, ['-c', 'alias.where=!node -e "console.log(process.env.PROBE)"', 'where'], {
      PROBE: 'given',
    });
    expect(out.trim()).toBe('given');
  });

  it('kills a command that writes nothing for its block timeout', async () => {
    const waiting = gitOnThread({
      ...gitCommand(scratch, ['-c', 'alias.wait=!sleep 30', 'wait']),
      blockTimeoutMs: 300,
    });
    await expect(waiting).rejects.toThrow('git wait timed out: no output for 0.3 s');
  });
});
