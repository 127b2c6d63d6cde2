import { mkdtempSync, rmSync, statSync, readdirSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { simpleGit } from 'simple-git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES, createTestDatabase } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';
import { DirectorySource } from '../../src/sources/directory.ts';
import { GitSource } from '../../src/sources/git.ts';
import { ManagedRepository } from '../../src/sources/managed.ts';
import { gitAuthFor } from '../../src/sources/credentials.ts';
import { normalizeSourceSpec } from '../../src/sources/spec.ts';
import { SourceError } from '../../src/sources/types.ts';
import type { GitSourceSpec } from '../../src/sources/types.ts';
import { sanitizeUrl } from '../../src/sources/url.ts';
import { createGitRemote } from './git-fixture.ts';
import type { GitRemote } from './git-fixture.ts';

const scratch = mkdtempSync(path.join(tmpdir(), 'agentyard-sources-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function gitSpec(url: string, extra: Partial<GitSourceSpec> = {}): GitSourceSpec {
  return {
    type: 'git',
    url,
    branch: 'main',
    path: null,
    poll_interval_seconds: 60,
    credentials_secret: null,
    push_secret: null,
    ...extra,
  };
}

let dirCount = 0;
function newDir(): string {
  return path.join(scratch, `d${++dirCount}`);
}

describe('git source', () => {
  let remote: GitRemote;
  beforeAll(async () => {
    remote = await createGitRemote();
  });
  afterAll(() => remote?.close());

  it('reads the production branch head: files, revision and commit', async () => {
    await remote.write({
      'factory.yaml': 'name: one\n',
      'webhooks/alerts.yaml': 'secretName: s\n',
      'docs/image.png': 'binary',
    });
    const sha = await remote.commitAndPush('First commit\n\nWith a body', { author: 'Ada <ada@example.com>' });
    const source = new GitSource({ spec: gitSpec(remote.bare), dir: newDir(), credentials: async () => undefined });
    const snap = await source.fetch();
    expect(snap.revision).toBe(`main@sha1:${sha}`);
    expect(snap.files.map((f) => f.path)).toEqual(['factory.yaml', 'webhooks/alerts.yaml']);
    expect(snap.files[0]!.content).toBe('name: one\n');
    expect(snap.commit).toMatchObject({ sha, author: 'Ada <ada@example.com>', message: 'First commit\n\nWith a body' });
    expect(snap.commit.time).toBeInstanceOf(Date);
  });

  it('ignores other branches and sees new commits on the next fetch (file:// URLs too)', async () => {
    const source = new GitSource({
      spec: gitSpec(`file://${remote.bare}`),
      dir: newDir(),
      credentials: async () => undefined,
    });
    const before = await source.fetch();
    await remote.write({ 'factory.yaml': 'name: feature\n' });
    await remote.commitAndPush('on a feature branch', { branch: 'feature' });
    expect((await source.fetch()).revision).toBe(before.revision);
    await remote.write({ 'factory.yaml': 'name: two\n' });
    const sha = await remote.commitAndPush('second');
    const after = await source.fetch();
    expect(after.revision).toBe(`main@sha1:${sha}`);
    expect(after.files.find((f) => f.path === 'factory.yaml')!.content).toBe('name: two\n');
  });

  it('reads a sub-path and reports a missing one as terminal', async () => {
    await remote.write({
      'factories/prod/factory.yaml': 'name: prod\n',
      'factories/prod/agents/a/agent.md': '---\n---\nhi\n',
    });
    await remote.commitAndPush('sub-path');
    const source = new GitSource({
      spec: gitSpec(remote.bare, { path: 'factories/prod' }),
      dir: newDir(),
      credentials: async () => undefined,
    });
    const snap = await source.fetch();
    expect(snap.files.map((f) => f.path)).toEqual(['agents/a/agent.md', 'factory.yaml']);
    const missing = new GitSource({
      spec: gitSpec(remote.bare, { path: 'nope' }),
      dir: newDir(),
      credentials: async () => undefined,
    });
    const err = await missing.fetch().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SourceError);
    expect(err).toMatchObject({ kind: 'terminal', reason: 'PathNotFound' });
    expect((err as Error).message).toMatch(/^read main@sha1:[0-9a-f]{40}: nope is not in the repository$/);
  });

  it('reports a missing branch and a missing repository as terminal', async () => {
    const noBranch = new GitSource({
      spec: gitSpec(remote.bare, { branch: 'release' }),
      dir: newDir(),
      credentials: async () => undefined,
    });
    await expect(noBranch.fetch()).rejects.toMatchObject({ kind: 'terminal', reason: 'BranchNotFound' });
    const noRepo = new GitSource({
      spec: gitSpec(path.join(scratch, 'missing.git')),
      dir: newDir(),
      credentials: async () => undefined,
    });
    await expect(noRepo.fetch()).rejects.toMatchObject({ kind: 'terminal', reason: 'RepositoryNotFound' });
  });

  it('never puts a token in an error message', async () => {
    // Nothing listens on port 9: the fetch fails, and the message must not carry the token.
    const source = new GitSource({
      spec: gitSpec('http://127.0.0.1:9/acme/factory.git'),
      dir: newDir(),
      credentials: async () => 'ghp_supersecrettoken123',
    });
    const err = (await source.fetch().catch((e: unknown) => e)) as SourceError;
    expect(err).toBeInstanceOf(SourceError);
    expect(err.kind).toBe('transient');
    expect(err.message).toContain('fetch http://127.0.0.1:9/acme/factory.git');
    expect(err.message).not.toContain('supersecret');
    expect(err.message).not.toContain(Buffer.from('x-access-token:ghp_supersecrettoken123').toString('base64'));
  });
});

describe('git credentials', () => {
  it('writes an SSH key to a 0600 file named by GIT_SSH_COMMAND and removes it afterwards', async () => {
    const key = '-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----';
    const auth = await gitAuthFor(key, 'ssh', path.join(scratch, 'known_hosts'));
    const file = /-i '([^']+)'/.exec(auth.env.GIT_SSH_COMMAND!)![1]!;
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(auth.env.GIT_SSH_COMMAND).toContain('IdentitiesOnly=yes');
    await auth.dispose();
    expect(() => statSync(file)).toThrow();
  });

  it('sends an HTTPS token as a Basic header through the environment, never in the URL', async () => {
    const auth = await gitAuthFor('tok123', 'https', '/dev/null');
    expect(auth.env).toEqual({
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'http.extraHeader',
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${Buffer.from('x-access-token:tok123').toString('base64')}`,
    });
    const userAuth = await gitAuthFor('bot:tok123', 'https', '/dev/null');
    expect(userAuth.env.GIT_CONFIG_VALUE_0).toBe(
      `Authorization: Basic ${Buffer.from('bot:tok123').toString('base64')}`,
    );
    await expect(gitAuthFor('tok', 'ssh', '/dev/null')).rejects.toThrow(/HTTPS/);
  });

  it('sanitizes URLs', () => {
    expect(sanitizeUrl('fatal: unable to access https://user:tok@github.com/a/b.git/')).toBe(
      'fatal: unable to access https://***@github.com/a/b.git/',
    );
  });
});

describe('source specs', () => {
  it('fills defaults and refuses what git must not run', () => {
    expect(normalizeSourceSpec(undefined)).toEqual({ type: 'managed' });
    expect(normalizeSourceSpec({ type: 'git', url: 'https://github.com/acme/factory.git' })).toEqual(
      gitSpec('https://github.com/acme/factory.git'),
    );
    expect(
      normalizeSourceSpec({ type: 'git', url: 'git@github.com:acme/f.git', path: './factories/prod/', branch: 'prod' }),
    ).toMatchObject({
      path: 'factories/prod',
      branch: 'prod',
    });
    expect(normalizeSourceSpec({ type: 'directory', path: 'x' }, '/srv')).toEqual({
      type: 'directory',
      path: '/srv/x',
    });
    expect(() => normalizeSourceSpec({ type: 'git', url: 'ext::sh -c touch% /tmp/pwned' })).toThrow(/must be an https/);
    expect(() => normalizeSourceSpec({ type: 'git', url: 'https://u:p@github.com/a/b' })).toThrow(/credentials_secret/);
    expect(() => normalizeSourceSpec({ type: 'git', url: '/r.git', path: '../etc' })).toThrow(/\.\./);
    expect(() => normalizeSourceSpec({ type: 'git', url: '/r.git', branch: '-x' })).toThrow(/branch/);
    expect(() => normalizeSourceSpec({ type: 'git', url: '/r.git', poll_interval_seconds: -1 })).toThrow(
      /poll_interval/,
    );
  });
});

describe('directory source', () => {
  it('gives the same revision for the same content and sees edits through the watcher', async () => {
    const dir = newDir();
    await mkdir(path.join(dir, 'webhooks'), { recursive: true });
    await writeFile(path.join(dir, 'factory.yaml'), 'name: a\n');
    const source = new DirectorySource(dir);
    const one = await source.fetch();
    expect(one.revision).toMatch(/^directory@sha256:[0-9a-f]{64}$/);
    expect((await source.fetch()).revision).toBe(one.revision);
    let changes = 0;
    let changed!: () => void;
    const seen = new Promise<void>((r) => (changed = r));
    const stop = await source.watch(() => {
      changes++;
      changed();
    }, 50);
    try {
      await writeFile(path.join(dir, 'webhooks', 'a.yaml'), 'secretName: s\n');
      await writeFile(path.join(dir, 'factory.yaml'), 'name: b\n');
      await Promise.race([
        seen,
        new Promise((_, reject) => setTimeout(() => reject(new Error('the watcher told no change in 5 s')), 5_000)),
      ]);
      expect(changes).toBeGreaterThan(0);
    } finally {
      await stop();
    }
    expect((await source.fetch()).revision).not.toBe(one.revision);
    await expect(new DirectorySource(path.join(dir, 'nope')).fetch()).rejects.toMatchObject({
      kind: 'terminal',
      reason: 'PathNotFound',
    });
  });
});

describe.each(ENGINES)('managed repository on %s', (engine) => {
  let database: TestDatabase;
  let teamId: string;
  const ada = { name: 'Ada', email: 'ada@example.com' };

  beforeAll(async () => {
    database = await createTestDatabase(engine);
    teamId = (await database.db.query<{ id: string }>('SELECT id FROM teams LIMIT 1')).rows[0]?.id ?? 'team_sources';
    await database.db.query(`INSERT INTO teams (id, name) VALUES ($1, 'sources') ON CONFLICT (id) DO NOTHING`, [
      teamId,
    ]);
  });
  afterAll(async () => database?.close());

  let factoryCount = 0;
  async function newFactory(): Promise<string> {
    const id = `fac_managed_${++factoryCount}`;
    await database.db.query(
      `INSERT INTO factories (id, team_id, name, source) VALUES ($1, $2, $1, '{"type":"managed"}')`,
      [id, teamId],
    );
    return id;
  }
  const mirror = (factoryId: string, dir = path.join(newDir(), 'fac.git')) =>
    new ManagedRepository(dir, { db: database.db, factoryId });
  const log = async (repo: ManagedRepository) =>
    (await simpleGit(repo.dir).raw(['log', '--format=%H %an %at %s', 'main'])).trim().split('\n');

  it('commits whole trees on main, reads them back, and refuses a commit on a moved branch', async () => {
    const repo = mirror(await newFactory());
    expect(await repo.fetch()).toBeUndefined();
    const first = await repo.commit(
      [
        { path: 'factory.yaml', content: 'name: m\n' },
        { path: 'webhooks/a.yaml', content: 'x' },
      ],
      ada,
      'create',
      undefined,
    );
    const snap = (await repo.fetch())!;
    expect(snap.revision).toBe(`main@sha1:${first}`);
    expect(snap.files.map((f) => f.path)).toEqual(['factory.yaml', 'webhooks/a.yaml']);
    expect(snap.commit).toMatchObject({ author: 'Ada <ada@example.com>', message: 'create' });
    const second = await repo.commit([{ path: 'factory.yaml', content: 'name: m2\n' }], ada, 'drop webhook', first);
    expect((await repo.fetch())!.files.map((f) => f.path)).toEqual(['factory.yaml']);
    await expect(repo.commit([], { name: 'x', email: 'y' }, 'stale', first)).rejects.toMatchObject({
      reason: 'Conflict',
    });
    expect(await repo.head()).toBe(second);
    expect(readdirSync(repo.dir)).toContain('HEAD');
  });

  it('shares one history between processes through the database, with the same commit ids', async () => {
    const factoryId = await newFactory();
    const a = mirror(factoryId);
    const b = mirror(factoryId);
    const first = await a.commit([{ path: 'factory.yaml', content: 'name: shared\n' }], ada, 'one', undefined);
    // b has never seen the commit: it takes it from the database and writes it under the same id
    expect(await b.head()).toBe(first);
    const second = await b.commit(
      [
        { path: 'factory.yaml', content: 'name: shared\n' },
        { path: 'webhooks/b.yaml', content: 'authMode: token\n' },
      ],
      ada,
      'two',
      first,
    );
    // a's next write starts from b's commit, or is refused: never a tree that drops b's file
    await expect(
      a.commit([{ path: 'factory.yaml', content: 'name: lost\n' }], ada, 'stale', first),
    ).rejects.toMatchObject({ reason: 'Conflict' });
    expect((await a.fetch())!.files.map((f) => f.path)).toEqual(['factory.yaml', 'webhooks/b.yaml']);
    expect(await log(a)).toEqual(await log(b));
    expect((await log(a))[0]).toMatch(new RegExp(`^${second} Ada `));
  });

  it("lets exactly one of two writes from the same head land, and the loser's mirror follows the winner", async () => {
    const factoryId = await newFactory();
    const a = mirror(factoryId);
    const b = mirror(factoryId);
    const base = await a.commit([{ path: 'factory.yaml', content: 'name: race\n' }], ada, 'base', undefined);
    expect(await b.head()).toBe(base);
    const results = await Promise.allSettled([
      a.commit(
        [
          { path: 'factory.yaml', content: 'name: race\n' },
          { path: 'webhooks/a.yaml', content: 'a' },
        ],
        ada,
        'from a',
        base,
      ),
      b.commit(
        [
          { path: 'factory.yaml', content: 'name: race\n' },
          { path: 'webhooks/b.yaml', content: 'b' },
        ],
        ada,
        'from b',
        base,
      ),
    ]);
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r) => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect((lost[0] as PromiseRejectedResult).reason).toMatchObject({ reason: 'Conflict' });
    const winner = (won[0] as PromiseFulfilledResult<string>).value;
    expect(await a.head()).toBe(winner);
    expect(await b.head()).toBe(winner);
    expect(await log(a)).toEqual(await log(b));
  });

  it('rebuilds the whole history in an empty data directory', async () => {
    const factoryId = await newFactory();
    const a = mirror(factoryId);
    let parent: string | undefined;
    for (let i = 1; i <= 4; i++)
      parent = await a.commit(
        [
          { path: 'factory.yaml', content: `name: n${i}\n` },
          { path: 'skills/s.md', content: `# ${i}\n` },
        ],
        ada,
        `change ${i}`,
        parent,
      );
    const fresh = mirror(factoryId);
    expect(await fresh.head()).toBe(parent);
    expect(await log(fresh)).toEqual(await log(a));
    expect((await fresh.fetch())!.files).toEqual([
      { path: 'factory.yaml', content: 'name: n4\n' },
      { path: 'skills/s.md', content: '# 4\n' },
    ]);
  });

  it('records the history of a repository written before the database kept it', async () => {
    // A repository with three commits and no record: what a data directory from an older release holds.
    const old = mirror(await newFactory());
    let parent: string | undefined;
    for (let i = 1; i <= 3; i++)
      parent = await old.commit(
        [
          { path: 'factory.yaml', content: `name: old${i}\n` },
          { path: 'notes.txt', content: `kept ${i}\n` },
        ],
        ada,
        `old ${i}`,
        parent,
      );
    const legacyId = await newFactory();
    const adopted = mirror(legacyId, old.dir);
    expect(await adopted.head()).toBe(parent);
    const rows = await database.db.query<{ seq: number; sha: string }>(
      'SELECT seq, sha FROM managed_commits WHERE factory_id = $1 ORDER BY seq',
      [legacyId],
    );
    expect(rows.rows.map((r) => r.seq)).toEqual([1, 2, 3]);
    // another process rebuilds it from the record under the same ids, files of every kind included
    const elsewhere = mirror(legacyId);
    expect(await elsewhere.head()).toBe(parent);
    expect(await log(elsewhere)).toEqual(await log(adopted));
    expect((await elsewhere.fetch())!.files.map((f) => f.path)).toEqual(['factory.yaml', 'notes.txt']);
  });
});
