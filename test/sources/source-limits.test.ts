/**
 * Hostile sources (issue 24): trees over the source limits are refused with FF_LIMIT_EXCEEDED from their
 * listing (git ls-tree sizes, a capped directory walk) before any content is read, and the status stays
 * small; teams reach only public hosts over https:// and ssh://, with one answer for every local path.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { simpleGit } from 'simple-git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_SOURCE_REFUSED } from '../../src/sources/access.ts';
import { DirectorySource } from '../../src/sources/directory.ts';
import { GitSource } from '../../src/sources/git.ts';
import { SourceUrlPolicy, isInternalAddress } from '../../src/sources/url-policy.ts';
import type { GitSourceSpec } from '../../src/sources/types.ts';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

const scratch = mkdtempSync(path.join(tmpdir(), 'agentyard-limits-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const FACTORY = 'name: big\n';

function gitSpec(url: string): GitSourceSpec {
  return {
    type: 'git',
    url,
    branch: 'main',
    path: null,
    poll_interval_seconds: 0,
    credentials_secret: null,
    push_secret: null,
  };
}

/** A bare repository with one commit on main, written by `git fast-import` from `write`. */
async function fastImport(name: string, write: (out: (chunk: string | Buffer) => Promise<void>) => Promise<void>) {
  const bare = path.join(scratch, `${name}.git`);
  await simpleGit().raw(['init', '--bare', '--quiet', '--initial-branch=main', bare]);
  const child = spawn('git', ['fast-import', '--quiet'], { cwd: bare, stdio: ['pipe', 'ignore', 'inherit'] });
  const done = new Promise<void>((resolve, reject) =>
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`fast-import exited ${code}`)))),
  );
  const out = (chunk: string | Buffer) =>
    new Promise<void>((resolve, reject) => child.stdin.write(chunk, (err) => (err ? reject(err) : resolve())));
  await write(out);
  child.stdin.end();
  await done;
  return bare;
}

function commitHeader(): string {
  const message = 'big tree';
  return `commit refs/heads/main\ncommitter T <t@example.com> 1700000000 +0000\ndata ${message.length}\n${message}\n`;
}

const fetchOf = (bare: string, limits?: ConstructorParameters<typeof GitSource>[0]['limits']) =>
  new GitSource({
    spec: gitSpec(bare),
    dir: path.join(scratch, `copy-${Math.random().toString(36).slice(2)}`),
    credentials: async () => undefined,
    ...(limits ? { limits } : {}),
  }).fetch();

let hundredThousand: string;
let hugeBlobs: string;
let manyOversize: string;
let manyInvalid: string;

beforeAll(async () => {
  hundredThousand = await fastImport('files-100k', async (out) => {
    await out(`blob\nmark :1\ndata ${FACTORY.length}\n${FACTORY}\n`);
    await out(commitHeader());
    await out('M 100644 :1 factory.yaml\n');
    let batch = '';
    for (let i = 0; i < 100_000; i++) {
      // 100 files a directory: fast-import's tree updates are linear in a directory's size.
      batch += `M 100644 :1 agents/g${Math.floor(i / 100)}/f${i % 100}.md\n`;
      if (batch.length > 1 << 16) {
        await out(batch);
        batch = '';
      }
    }
    await out(`${batch}\n`);
  });
  hugeBlobs = await fastImport('blobs-50m', async (out) => {
    const mib = Buffer.alloc(1024 * 1024, 0x61);
    for (let b = 0; b < 10; b++) {
      await out(`blob\nmark :${b + 1}\ndata ${50 * 1024 * 1024}\n`);
      await out(`# ${b}\n`);
      for (let m = 0; m < 50; m++) await out(m === 49 ? mib.subarray(0, mib.length - `# ${b}\n`.length) : mib);
      await out('\n');
    }
    await out(`blob\nmark :100\ndata ${FACTORY.length}\n${FACTORY}\n`);
    await out(commitHeader());
    await out('M 100644 :100 factory.yaml\n');
    for (let b = 0; b < 10; b++) await out(`M 100644 :${b + 1} agents/a${b}/agent.md\n`);
    await out('\n');
  });
  manyOversize = await fastImport('oversize-500', async (out) => {
    const body = '---\nagentType: WORKER\n---\nA prompt longer than the test limit.\n';
    await out(`blob\nmark :1\ndata ${body.length}\n${body}\n`);
    await out(`blob\nmark :2\ndata ${FACTORY.length}\n${FACTORY}\n`);
    await out(commitHeader());
    await out('M 100644 :2 factory.yaml\n');
    for (let i = 0; i < 500; i++) await out(`M 100644 :1 agents/a${String(i).padStart(3, '0')}/agent.md\n`);
    await out('\n');
  });
  manyInvalid = await fastImport('invalid-500', async (out) => {
    const body = '---\nagentType: WORKER\nnotAField: 1\n---\nPrompt.\n';
    await out(`blob\nmark :1\ndata ${body.length}\n${body}\n`);
    await out(`blob\nmark :2\ndata ${FACTORY.length}\n${FACTORY}\n`);
    await out(commitHeader());
    await out('M 100644 :2 factory.yaml\n');
    for (let i = 0; i < 500; i++) await out(`M 100644 :1 agents/a${String(i).padStart(3, '0')}/agent.md\n`);
    await out('\n');
  });
}, 180_000);

describe('git source limits', () => {
  it('refuses a 100,000-file tree from its listing: one FF_LIMIT_EXCEEDED at the first file past the limit', async () => {
    const snapshot = await fetchOf(hundredThousand);
    expect(snapshot.files).toEqual([]);
    expect(snapshot.refused).toEqual([
      expect.objectContaining({ code: 'FF_LIMIT_EXCEEDED', file: expect.stringMatching(/^agents\/g\d+\/f\d+\.md$/) }),
    ]);
    expect(snapshot.refused![0]!.message).toMatch(/more than 2000 factory files/);
  });

  it('refuses ten 50 MB blobs by their listed sizes, without reading them', async () => {
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 5);
    const snapshot = await fetchOf(hugeBlobs).finally(() => clearInterval(sampler));
    expect(snapshot.files).toEqual([]);
    expect(snapshot.refused!.map((d) => d.file)).toEqual(Array.from({ length: 10 }, (_, b) => `agents/a${b}/agent.md`));
    for (const d of snapshot.refused!) expect(d.message).toMatch(/is 52428800 bytes; at most 256 KiB/);
    // Reading the blobs would hold 500 MB in this process.
    expect(peak - before).toBeLessThan(200 * 1024 * 1024);
  }, 180_000);

  it('reports at most 100 refusals and counts the rest', async () => {
    const snapshot = await fetchOf(manyOversize, { files: 1000, fileBytes: 16, totalBytes: 1 << 20 });
    expect(snapshot.refused).toHaveLength(101);
    expect(snapshot.refused![100]!.message).toBe('400 more diagnostics not shown');
  });
});

describe('directory source limits', () => {
  it('refuses a tree over the cap from its walk', async () => {
    const dir = path.join(scratch, 'big-dir');
    await mkdir(dir);
    await writeFile(path.join(dir, 'factory.yaml'), FACTORY);
    for (let i = 0; i < 30; i++) {
      await mkdir(path.join(dir, 'agents', `a${i}`), { recursive: true });
      await writeFile(path.join(dir, 'agents', `a${i}`, 'agent.md'), '---\nagentType: WORKER\n---\nx\n');
    }
    const snapshot = await new DirectorySource(dir, { files: 20, fileBytes: 1024, totalBytes: 1 << 20 }).fetch();
    expect(snapshot.files).toEqual([]);
    expect(snapshot.refused).toEqual([expect.objectContaining({ code: 'FF_LIMIT_EXCEEDED' })]);
    const within = await new DirectorySource(dir).fetch();
    expect(within.refused).toBeUndefined();
    expect(within.files).toHaveLength(31);
  });

  it('reads and watches `/` without walking the disk: only factory.yaml and resource directories', async () => {
    const root = new DirectorySource('/');
    const snapshot = await root.fetch();
    expect(snapshot.files.every((f) => f.path === 'factory.yaml' || f.path.includes('/'))).toBe(true);
    const stop = await root.watch(() => {});
    await stop();
  });

  it('answers the same for a missing, an unreadable and a not-a-directory path', async () => {
    const messages = await Promise.all(
      ['/nonexistent/factory', '/etc/hostname', '/root/private'].map((p) =>
        new DirectorySource(p).fetch().then(
          () => 'read',
          (err: Error) => err.message.replace(p, '<path>'),
        ),
      ),
    );
    expect(new Set(messages).size).toBe(1);
    expect(messages[0]).toMatch(/no readable directory$/);
  });
});

describe('the source URL policy', () => {
  const resolver = (table: Record<string, string[]>) => async (host: string) => {
    const found = table[host];
    if (!found) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return found;
  };

  it('classifies loopback, private, link-local, mapped and reserved addresses as internal', () => {
    for (const a of [
      '127.0.0.1',
      '10.2.3.4',
      '172.20.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '100.64.0.1',
      '224.0.0.1',
    ])
      expect(isInternalAddress(a), a).toBe(true);
    for (const a of ['93.184.215.14', '140.82.112.3', '2606:4700::1111']) expect(isInternalAddress(a), a).toBe(false);
  });

  it('checks every address of a host; allowed hosts pass, the server port never does', async () => {
    const policy = new SourceUrlPolicy({
      allowedHosts: ['git.internal', 'build.internal:8443'],
      ownPorts: [8080],
      resolve: resolver({
        'public.example': ['93.184.215.14'],
        'mixed.example': ['93.184.215.14', '10.0.0.5'],
        'git.internal': ['10.0.0.7'],
        'build.internal': ['10.0.0.8'],
      }),
    });
    expect(await policy.check({ host: 'public.example', port: 443 })).toMatchObject({ ok: true });
    expect(await policy.check({ host: 'mixed.example', port: 443 })).toMatchObject({ ok: false, reason: 'internal' });
    expect(await policy.check({ host: 'git.internal', port: 443 })).toMatchObject({ ok: true });
    expect(await policy.check({ host: 'git.internal', port: 8080 })).toMatchObject({ ok: false, reason: 'own-port' });
    expect(await policy.check({ host: 'build.internal', port: 8443 })).toMatchObject({ ok: true });
    expect(await policy.check({ host: 'build.internal', port: 443 })).toMatchObject({ ok: false });
    expect(await policy.check({ host: 'gone.example', port: 443 })).toMatchObject({ ok: false, reason: 'unresolved' });
  });

  it('runs again at fetch time with the resolved address, and git is held to it', async () => {
    // Registered when it resolved publicly; now it resolves to this host.
    const rebound = new GitSource({
      spec: gitSpec('https://git.example/acme/factory.git'),
      dir: path.join(scratch, 'rebound'),
      credentials: async () => undefined,
      policy: new SourceUrlPolicy({
        allowedHosts: [],
        ownPorts: [],
        resolve: resolver({ 'git.example': ['127.0.0.1'] }),
      }),
    });
    await expect(rebound.fetch()).rejects.toMatchObject({ kind: 'terminal', reason: 'URLNotAllowed' });
    // An allowed host: git gets the pinned address and no redirects, and fails only to connect (nothing on port 9);
    // the failure reads like a refused host, whatever git saw.
    const allowed = new GitSource({
      spec: gitSpec('http://git.example:9/acme/factory.git'),
      dir: path.join(scratch, 'allowed'),
      credentials: async () => undefined,
      policy: new SourceUrlPolicy({
        allowedHosts: ['git.example'],
        ownPorts: [],
        resolve: resolver({ 'git.example': ['127.0.0.1'] }),
      }),
    });
    const err = (await allowed.fetch().catch((e: unknown) => e)) as Error & { reason: string };
    expect(err.reason).toBe('FetchFailed');
    expect(err.message).toMatch(/git\.example is not reachable for git sources/);
  });
});

describe.each(ENGINES)('hostile sources through the API on %s', (engine) => {
  let s: TestServer;
  let teamKey: string;
  beforeAll(async () => {
    s = await startTestServer(engine);
    const team = await s.api('POST', '/teams', { name: `limits-${engine}`, admin_name: 'Team Admin' });
    teamKey = team.body.admin_key.key;
  });
  afterAll(async () => {
    await s?.close();
  });

  const create = (url: string, key = teamKey) =>
    s.api(
      'POST',
      '/factories',
      { name: `f-${Math.random().toString(36).slice(2, 8)}`, source: { type: 'git', url, poll_interval_seconds: 0 } },
      key,
    );

  it('gives a team key one answer for every local path, file:// URL and directory, existing or not', async () => {
    const answers = await Promise.all([
      create(`file://${hundredThousand}`),
      create(hundredThousand),
      create('/nonexistent/repo.git'),
      create('/etc/passwd'),
      create(`file://${path.join(s.dataDir, 'master.key')}`),
      s.api('POST', '/factories', { name: 'dir', source: { type: 'directory', path: '/etc' } }, teamKey),
    ]);
    for (const answer of answers) {
      expect(answer.status).toBe(403);
      expect(answer.body.detail).toBe(LOCAL_SOURCE_REFUSED);
    }
  });

  it('refuses a team key hosts on this machine and its networks, the server port included', async () => {
    const port = new URL(s.url).port;
    const plain = await create(`http://127.0.0.1:${port}/api/v1/whoami`);
    expect(plain.status).toBe(403);
    for (const url of [
      'https://localhost/acme/factory.git',
      'https://10.1.2.3/acme/factory.git',
      'https://[::ffff:127.0.0.1]/acme/factory.git',
      'ssh://git@169.254.169.254/acme/factory.git',
      'git@127.0.0.1:acme/factory.git',
    ]) {
      const refused = await create(url);
      expect(refused.status, url).toBe(400);
      expect(refused.body.detail).toMatch(/must resolve only to public addresses/);
    }
    // The instance admin cannot point the server at its own port either.
    expect((await create(`http://127.0.0.1:${port}/api/v1/whoami`, s.adminKey)).status).toBe(400);
  });

  it('still lets the instance admin use file://; a 100,000-file repository is refused and the status stays small', async () => {
    const created = await create(`file://${hundredThousand}`, s.adminKey);
    expect(created.status).toBe(201);
    const synced = await s.api('POST', `/factories/${created.body.id}/sync`);
    expect(synced.body).toMatchObject({ result: 'failed', reason: 'ValidationFailed' });
    expect(synced.body.errors).toEqual([expect.objectContaining({ code: 'FF_LIMIT_EXCEEDED' })]);
    const status = await s.api('GET', `/factories/${created.body.id}`);
    expect(status.body.status.errors).toHaveLength(1);
    expect(status.text.length).toBeLessThan(16 * 1024);
    const applies = await s.api('GET', `/factories/${created.body.id}/applies`);
    expect(applies.text.length).toBeLessThan(16 * 1024);
  }, 60_000);

  it('keeps 100 diagnostics and a count of a tree with 500 invalid files (1,002 errors), in the status and the history', async () => {
    const created = await create(`file://${manyInvalid}`, s.adminKey);
    const synced = await s.api('POST', `/factories/${created.body.id}/sync`);
    expect(synced.body).toMatchObject({ result: 'failed', reason: 'ValidationFailed' });
    expect(synced.body.message).toMatch(/: 1\d\d\d errors; first:/);
    const status = await s.api('GET', `/factories/${created.body.id}`);
    expect(status.body.status.errors).toHaveLength(101);
    expect(status.body.status.errors[100].message).toMatch(/^\d+ more diagnostics not shown$/);
    const applies = await s.api('GET', `/factories/${created.body.id}/applies`);
    expect(applies.body.applies[0].errors).toHaveLength(101);
  }, 60_000);
});
