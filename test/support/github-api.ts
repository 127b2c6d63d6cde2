/**
 * A local stand-in for GitHub's REST API, answering in its documented wire format the calls Agentyard makes
 * through octokit:
 * - `POST /app/installations/{id}/access_tokens` (docs.github.com/rest/apps/apps#create-an-installation-access-
 *   token-for-an-app); the App's JWT is verified with the App's public key;
 * - `GET /user` (docs.github.com/rest/users/users#get-the-authenticated-user) for the users' tokens given;
 * - `GET /repos/{owner}/{repo}/pulls/{n}/files` (docs.github.com/rest/pulls/pulls#list-pull-requests-files),
 *   paginated with `per_page`/`page` and a `Link` header;
 * - `POST /repos/{owner}/{repo}/check-runs` and `PATCH /repos/{owner}/{repo}/check-runs/{id}`
 *   (docs.github.com/rest/checks/runs), at most 50 annotations per request as GitHub enforces;
 * - `POST /repos/{owner}/{repo}/issues/{n}/comments` (docs.github.com/rest/issues/comments#create-an-issue-comment),
 *   answered as the App's bot user.
 * Repository calls need an installation token this stand-in issued (`Authorization: token …`).
 */
import { EventEmitter } from 'node:events';
import { createPublicKey, createVerify } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TokenRequest {
  installationId: string;
  appId: string;
  repositories: string[] | undefined;
}

export interface RecordedCall {
  method: string;
  path: string;
  body: any;
}

export type FailedAnswer = number | { status: number; headers: Record<string, string> };

export interface GithubApiStandIn {
  url: string;
  tokenRequests: TokenRequest[];
  /** Every repository call, in order (token requests excluded). */
  calls: RecordedCall[];
  /** `owner/repo#number` → the pull request's changed file names. */
  pullFiles: Map<string, string[]>;
  /** Answers the next repository calls with these statuses (e.g. 502, or 403 with `retry-after`) before answering normally. */
  failNext(...answers: FailedAnswer[]): void;
  /** Calls `listener` after each answered request (every call recorded by then); answers the function that removes it. */
  onCall(listener: () => void): () => void;
  close(): Promise<void>;
}

function verifyJwt(jwt: string, publicKeyPem: string): Record<string, unknown> | undefined {
  const [header, payload, signature] = jwt.split('.');
  if (!header || !payload || !signature) return undefined;
  const verifier = createVerify('RSA-SHA256');
  verifier.update(`${header}.${payload}`);
  if (!verifier.verify(createPublicKey(publicKeyPem), Buffer.from(signature, 'base64url'))) return undefined;
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
}

/** A user's personal token and the account GitHub answers for it. */
export type GithubUsers = Record<string, { login: string; id: number; name: string | null }>;

export async function startGithubApi(publicKeyPem: string, users: GithubUsers = {}): Promise<GithubApiStandIn> {
  const tokenRequests: TokenRequest[] = [];
  const calls: RecordedCall[] = [];
  const pullFiles = new Map<string, string[]>();
  const issuedTokens = new Set<string>();
  const failures: FailedAnswer[] = [];
  let issued = 0;
  let checkRunIds = 9_000_000;
  let commentIds = 1_000_000_000;
  const answered = new EventEmitter();
  answered.setMaxListeners(0);
  const server = createServer((req, res) => {
    res.once('finish', () => answered.emit('call'));
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://stand-in');
      const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        res
          .writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers })
          .end(JSON.stringify(body));
      };
      const text = Buffer.concat(chunks).toString('utf8');
      const body = text ? (JSON.parse(text) as any) : undefined;

      if (req.method === 'GET' && url.pathname === '/user') {
        const token = /^(?:token|bearer) (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
        const user = token ? users[token] : undefined;
        if (!user) return send(401, { message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest' });
        return send(200, { login: user.login, id: user.id, name: user.name, type: 'User', site_admin: false });
      }
      const tokenMatch = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(url.pathname);
      if (tokenMatch && req.method === 'POST') {
        const jwt = /^bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
        const claims = jwt ? verifyJwt(jwt, publicKeyPem) : undefined;
        if (!claims) return send(401, { message: 'A JSON web token could not be decoded' });
        const repositories = (body as { repositories?: string[] } | undefined)?.repositories;
        tokenRequests.push({ installationId: tokenMatch[1]!, appId: String(claims.iss), repositories });
        const token = `ghs_standin${String(++issued).padStart(8, '0')}abcdefghijklmnopqrstu`;
        issuedTokens.add(token);
        return send(201, {
          token,
          expires_at: new Date(Date.now() + 3_600_000).toISOString(),
          permissions: { contents: 'write', issues: 'write', pull_requests: 'write', checks: 'write' },
          repository_selection: 'selected',
          repositories: (repositories ?? []).map((name, i) => ({ id: i + 1, name })),
        });
      }

      const repoMatch = /^\/repos\/([^/]+)\/([^/]+)(\/.*)$/.exec(url.pathname);
      if (!repoMatch) return send(404, { message: 'Not Found' });
      const token = /^(?:token|bearer) (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
      if (!token || !issuedTokens.has(token)) return send(401, { message: 'Bad credentials' });
      calls.push({ method: req.method ?? '', path: url.pathname, body });
      const failure = failures.shift();
      if (typeof failure === 'number') return send(failure, { message: 'Server Error' });
      if (failure)
        return send(failure.status, { message: 'You have exceeded a secondary rate limit.' }, failure.headers);
      const [, owner, repo, rest] = repoMatch as unknown as [string, string, string, string];

      const files = /^\/pulls\/(\d+)\/files$/.exec(rest);
      if (files && req.method === 'GET') {
        const all = pullFiles.get(`${owner}/${repo}#${files[1]}`);
        if (!all) return send(404, { message: 'Not Found' });
        const perPage = Math.min(100, Number(url.searchParams.get('per_page') ?? 30));
        const page = Number(url.searchParams.get('page') ?? 1);
        const last = Math.max(1, Math.ceil(all.length / perPage));
        const slice = all.slice((page - 1) * perPage, page * perPage);
        const link = (p: number, rel: string) =>
          `<http://${req.headers.host}${url.pathname}?per_page=${perPage}&page=${p}>; rel="${rel}"`;
        const links: Record<string, string> =
          page < last ? { link: `${link(page + 1, 'next')}, ${link(last, 'last')}` } : {};
        return send(
          200,
          slice.map((filename, i) => ({
            sha: 'bbcd538c8e72b8c175046e27cc8f907076331401',
            filename,
            status: 'modified',
            additions: 1,
            deletions: 0,
            changes: 1,
            blob_url: `https://github.com/${owner}/${repo}/blob/main/${filename}`,
            raw_url: `https://github.com/${owner}/${repo}/raw/main/${filename}`,
            contents_url: `https://api.github.com/repos/${owner}/${repo}/contents/${filename}`,
            patch: `@@ -${i},1 +${i},1 @@`,
          })),
          links,
        );
      }
      if (rest === '/check-runs' && req.method === 'POST') {
        if (!body?.name || !body?.head_sha) return send(422, { message: 'Validation Failed' });
        const id = ++checkRunIds;
        return send(201, {
          id,
          head_sha: body.head_sha,
          name: body.name,
          status: body.status ?? 'queued',
          conclusion: null,
          external_id: body.external_id ?? '',
          url: `https://api.github.com/repos/${owner}/${repo}/check-runs/${id}`,
          html_url: `https://github.com/${owner}/${repo}/runs/${id}`,
          output: { title: body.output?.title ?? null, summary: body.output?.summary ?? null, annotations_count: 0 },
        });
      }
      const comment = /^\/issues\/(\d+)\/comments$/.exec(rest);
      if (comment && req.method === 'POST') {
        if (typeof body?.body !== 'string' || !body.body) return send(422, { message: 'Validation Failed' });
        const id = ++commentIds;
        return send(201, {
          id,
          node_id: `IC_${id}`,
          url: `https://api.github.com/repos/${owner}/${repo}/issues/comments/${id}`,
          html_url: `https://github.com/${owner}/${repo}/issues/${comment[1]}#issuecomment-${id}`,
          body: body.body,
          user: { login: 'agentyard[bot]', id: 41898282, type: 'Bot' },
          created_at: new Date().toISOString(),
          updated_at: new Date().toISOString(),
          author_association: 'NONE',
        });
      }
      const checkRun = /^\/check-runs\/(\d+)$/.exec(rest);
      if (checkRun && req.method === 'PATCH') {
        if ((body?.output?.annotations?.length ?? 0) > 50)
          return send(422, { message: 'Only 50 annotations are allowed per request' });
        return send(200, {
          id: Number(checkRun[1]),
          name: 'agentyard/factory-config',
          status: body?.status ?? 'in_progress',
          conclusion: body?.conclusion ?? null,
        });
      }
      return send(404, { message: 'Not Found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    onCall(listener) {
      answered.on('call', listener);
      return () => answered.off('call', listener);
    },
    url: `http://127.0.0.1:${port}`,
    tokenRequests,
    calls,
    pullFiles,
    failNext: (...answers) => failures.push(...answers),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
