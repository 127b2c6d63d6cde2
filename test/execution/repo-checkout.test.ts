/**
 * A benchmark task's starting repositories: fetched at their commit from real git repositories, refused on a
 * host the git sources' URL policy refuses, and failing with a message naming the ref.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  checkoutRepositories,
  parseRepoRef,
  repositorySettings,
  startingRepoRefs,
} from '../../src/execution/repo-checkout.ts';
import { SourceUrlPolicy } from '../../src/sources/url-policy.ts';

const root = mkdtempSync(path.join(tmpdir(), 'ay-checkout-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function repository(): { first: string; second: string } {
  const work = path.join(root, 'work');
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: work })
      .toString()
      .trim();
  mkdirSync(work);
  git('init', '--quiet', '-b', 'main');
  writeFileSync(path.join(work, 'a.txt'), 'one\n');
  git('add', '.');
  git('commit', '--quiet', '-m', 'one');
  const first = git('rev-parse', 'HEAD');
  writeFileSync(path.join(work, 'a.txt'), 'two\n');
  git('commit', '--quiet', '-am', 'two');
  const second = git('rev-parse', 'HEAD');
  execFileSync('git', ['clone', '--quiet', '--bare', work, path.join(root, 'git', 'acme', 'api.git')]);
  return { first, second };
}
const { first, second } = repository();
const policy = new SourceUrlPolicy({ allowedHosts: [], ownPorts: [] });

function workspace(name: string): string {
  const dir = path.join(root, name);
  mkdirSync(dir);
  return dir;
}

describe('starting repositories', () => {
  it('checks each ref out at its commit, detached, with origin set', async () => {
    const ws = workspace('ws1');
    const settings = { baseUrls: { 'github.com': `file://${root}/git` }, policy };
    const dirs = await checkoutRepositories([`github.com:acme/api@${first}`], ws, path.join(root, 's1'), settings);
    expect(dirs).toEqual(['api']);
    expect(readFileSync(path.join(ws, 'api', 'a.txt'), 'utf8')).toBe('one\n');
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: path.join(ws, 'api') })
      .toString()
      .trim();
    expect(head).toBe(first);
    const again = workspace('ws1b');
    await checkoutRepositories([`github.com:acme/api@${second}`], again, path.join(root, 's1b'), settings);
    expect(readFileSync(path.join(again, 'api', 'a.txt'), 'utf8')).toBe('two\n');
  });

  it('refuses a host the URL policy refuses, naming the ref', async () => {
    const ws = workspace('ws2');
    const settings = { baseUrls: { 'github.com': 'http://127.0.0.1:9' }, policy };
    await expect(
      checkoutRepositories([`github.com:acme/api@${first}`], ws, path.join(root, 's2'), settings),
    ).rejects.toThrow(`github.com:acme/api@${first}: source.url: 127.0.0.1 is not reachable for git sources`);
  });

  it('fails clearly on a commit the repository lacks, and on a malformed ref', async () => {
    const ws = workspace('ws3');
    const settings = { baseUrls: { 'github.com': `file://${root}/git` }, policy };
    const missing = 'b'.repeat(40);
    await expect(
      checkoutRepositories([`github.com:acme/api@${missing}`], ws, path.join(root, 's3'), settings),
    ).rejects.toThrow(`github.com:acme/api@${missing}: could not check out ${missing} from file://`);
    await expect(checkoutRepositories(['github.com:../x@main'], ws, path.join(root, 's4'), settings)).rejects.toThrow(
      'not a starting repository ref',
    );
    expect(parseRepoRef(`github.com:acme/../api@${first}`)).toBeUndefined();
    expect(parseRepoRef(`gitlab.com:group/sub/project@${first}`)).toMatchObject({ name: 'project' });
  });

  it('stops when its signal aborts (the execution was stopped)', async () => {
    const ws = workspace('ws5');
    const settings = { baseUrls: { 'github.com': `file://${root}/git` }, policy };
    const stopped = new AbortController();
    stopped.abort();
    await expect(
      checkoutRepositories([`github.com:acme/api@${first}`], ws, path.join(root, 's5'), settings, stopped.signal),
    ).rejects.toThrow();
    expect(existsSync(path.join(ws, 'api'))).toBe(false);
  });

  it("takes refs only from a benchmark task's run, never from an API run's metadata", () => {
    const metadata = { agentyard_benchmark: 'smoke', agentyard_starting_repo_refs: `github.com:a/b@${first}\n` };
    expect(startingRepoRefs({ source: 'FACTORY', metadata })).toEqual([`github.com:a/b@${first}`]);
    expect(startingRepoRefs({ source: 'API', metadata })).toEqual([]);
    expect(startingRepoRefs({ source: 'FACTORY', metadata: { agentyard_starting_repo_refs: 'x' } })).toEqual([]);
  });

  it('reads its base URLs from the environment and refuses other schemes', () => {
    expect(repositorySettings({}).baseUrls['github.com']).toBe('https://github.com');
    expect(repositorySettings({ AGENTYARD_GIT_BASE_URL: 'https://git.example.com/' }).baseUrls['github.com']).toBe(
      'https://git.example.com',
    );
    expect(() => repositorySettings({ AGENTYARD_GIT_BASE_URL: 'ext::sh -c x' })).toThrow(
      'AGENTYARD_GIT_BASE_URL must be an https, http or file URL',
    );
  });
});
