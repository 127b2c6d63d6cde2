import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GitSource } from '../../src/sources/git.ts';
import type { GitSourceSpec } from '../../src/sources/types.ts';
import { createGitRemote } from './git-fixture.ts';
import type { GitRemote } from './git-fixture.ts';

const TOKEN = 'ghs_realtoken_0123456789';

/**
 * A real smart-HTTP git server: git's own http-backend behind a Node server that demands
 * `Authorization: Basic base64(x-access-token:<TOKEN>)`, as GitHub does for app tokens.
 */
function gitHttpServer(projectRoot: string, seenAuth: string[]): Server {
  const backend = path.join(execFileSync('git', ['--exec-path'], { encoding: 'utf8' }).trim(), 'git-http-backend');
  return createServer((req, res) => {
    const auth = req.headers.authorization ?? '';
    seenAuth.push(auth);
    if (auth !== `Basic ${Buffer.from(`x-access-token:${TOKEN}`).toString('base64')}`) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="git"' }).end('unauthorized');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    const cgi = spawn(backend, [], {
      env: {
        GIT_PROJECT_ROOT: projectRoot,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: url.pathname,
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method ?? 'GET',
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        REMOTE_ADDR: '127.0.0.1',
        PATH: process.env.PATH ?? '',
      },
    });
    req.pipe(cgi.stdin);
    const chunks: Buffer[] = [];
    cgi.stdout.on('data', (c: Buffer) => chunks.push(c));
    cgi.on('close', () => {
      const out = Buffer.concat(chunks);
      const split = out.indexOf('\r\n\r\n') >= 0 ? out.indexOf('\r\n\r\n') : out.indexOf('\n\n');
      const sep = out.indexOf('\r\n\r\n') >= 0 ? 4 : 2;
      const headers: Record<string, string> = {};
      let status = 200;
      for (const line of out.subarray(0, split).toString('latin1').split(/\r?\n/)) {
        const i = line.indexOf(':');
        const name = line.slice(0, i).trim().toLowerCase();
        const value = line.slice(i + 1).trim();
        if (name === 'status') status = Number(value.split(' ')[0]);
        else if (name) headers[name] = value;
      }
      res.writeHead(status, headers).end(out.subarray(split + sep));
    });
  });
}

describe('git source over HTTP with a token', () => {
  let remote: GitRemote;
  let server: Server;
  let url: string;
  const seenAuth: string[] = [];
  const scratch = mkdtempSync(path.join(tmpdir(), 'agentyard-http-'));

  beforeAll(async () => {
    remote = await createGitRemote();
    await remote.write({ 'factory.yaml': 'name: over-http\n' });
    await remote.commitAndPush('over http');
    server = gitHttpServer(path.dirname(remote.bare), seenAuth);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/remote.git`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    remote?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  const spec = (u: string): GitSourceSpec => ({
    type: 'git',
    url: u,
    branch: 'main',
    path: null,
    poll_interval_seconds: 60,
    credentials_secret: 'token',
    push_secret: null,
  });
  let n = 0;
  const dir = () => path.join(scratch, `copy-${++n}`);

  it('fetches with the token sent as a Basic Authorization header', async () => {
    const source = new GitSource({ spec: spec(url), dir: dir(), credentials: async () => TOKEN });
    const snap = await source.fetch();
    expect(snap.files).toEqual([{ path: 'factory.yaml', content: 'name: over-http\n' }]);
    expect(seenAuth.some((a) => a.startsWith('Basic '))).toBe(true);
    expect(seenAuth.every((a) => !a.includes(TOKEN))).toBe(true);
  });

  it('reports a wrong or missing token as terminal, naming neither', async () => {
    const wrong = new GitSource({ spec: spec(url), dir: dir(), credentials: async () => 'ghs_wrong_token_value' });
    const err = (await wrong.fetch().catch((e: unknown) => e)) as Error & { kind: string; reason: string };
    expect(err).toMatchObject({ kind: 'terminal', reason: 'AuthenticationFailed' });
    expect(err.message).toContain(`fetch ${url} (branch main): authentication failed`);
    expect(err.message).not.toContain('ghs_wrong');
    const none = new GitSource({
      spec: { ...spec(url), credentials_secret: null },
      dir: dir(),
      credentials: async () => undefined,
    });
    await expect(none.fetch()).rejects.toMatchObject({ kind: 'terminal', reason: 'AuthenticationFailed' });
  });

  it('refuses to send a token over plain http to another host', async () => {
    const source = new GitSource({
      spec: spec('http://git.example.com/acme/f.git'),
      dir: dir(),
      credentials: async () => TOKEN,
    });
    await expect(source.fetch()).rejects.toMatchObject({ kind: 'terminal', reason: 'InsecureURL' });
  });
});
