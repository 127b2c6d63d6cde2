/**
 * A local stand-in for GitHub's REST API, answering in its documented wire format the calls Agentyard makes
 * through octokit: `POST /app/installations/{id}/access_tokens` (docs.github.com/rest/apps/apps#create-an-
 * installation-access-token-for-an-app; the App's JWT is verified with the App's public key) and `GET /user`
 * (docs.github.com/rest/users/users#get-the-authenticated-user) for the users' tokens given.
 */
import { createPublicKey, createVerify } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TokenRequest {
  installationId: string;
  appId: string;
  repositories: string[] | undefined;
}

export interface GithubApiStandIn {
  url: string;
  tokenRequests: TokenRequest[];
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
  let issued = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body));
      };
      if (req.method === 'GET' && req.url === '/user') {
        const token = /^(?:token|bearer) (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
        const user = token ? users[token] : undefined;
        if (!user) return send(401, { message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest' });
        return send(200, { login: user.login, id: user.id, name: user.name, type: 'User', site_admin: false });
      }
      const match = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(req.url ?? '');
      if (req.method !== 'POST' || !match) return send(404, { message: 'Not Found' });
      const jwt = /^bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
      const claims = jwt ? verifyJwt(jwt, publicKeyPem) : undefined;
      if (!claims) return send(401, { message: 'A JSON web token could not be decoded' });
      const body = chunks.length
        ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { repositories?: string[] })
        : {};
      tokenRequests.push({ installationId: match[1]!, appId: String(claims.iss), repositories: body.repositories });
      send(201, {
        token: `ghs_standin${String(++issued).padStart(8, '0')}abcdefghijklmnopqrstu`,
        expires_at: new Date(Date.now() + 3_600_000).toISOString(),
        permissions: { contents: 'write', issues: 'write', pull_requests: 'write' },
        repository_selection: 'selected',
        repositories: (body.repositories ?? []).map((name, i) => ({ id: i + 1, name })),
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    tokenRequests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
