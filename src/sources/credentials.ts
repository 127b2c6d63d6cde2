import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { GitUrlKind } from './url.ts';

/** Environment for one git command, and what to clean up after it. */
export interface GitAuth {
  env: Record<string, string>;
  /** Values that must never appear in a message (the token or key). */
  secrets: string[];
  dispose(): Promise<void>;
}

export const NO_AUTH: GitAuth = { env: {}, secrets: [], dispose: async () => {} };

export function isSshPrivateKey(value: string): boolean {
  return /-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(value);
}

function shellQuote(value: string): string {
  return `'${value.replaceAll("'", "'\\''")}'`;
}

/**
 * Credentials from a managed secret, for one git command:
 * - an SSH private key is written to a 0600 file in a fresh temporary directory and named in GIT_SSH_COMMAND;
 * - anything else is an HTTPS token (`token`, or `user:token`), sent as an HTTP Basic Authorization header
 *   set through GIT_CONFIG_* environment variables. The token never enters the URL, the command line (so no
 *   process listing shows it), the repository's config, or an error message.
 */
export async function gitAuthFor(
  secret: string | undefined,
  kind: GitUrlKind,
  knownHostsFile: string,
): Promise<GitAuth> {
  if (secret === undefined) return NO_AUTH;
  if (isSshPrivateKey(secret)) {
    if (kind !== 'ssh') throw new Error('the credentials secret holds an SSH key but the URL is not an SSH URL');
    const dir = await mkdtemp(path.join(tmpdir(), 'agentyard-ssh-'));
    const keyFile = path.join(dir, 'key');
    await writeFile(keyFile, secret.endsWith('\n') ? secret : `${secret}\n`, { mode: 0o600 });
    const command = [
      'ssh',
      '-i',
      shellQuote(keyFile),
      '-o IdentitiesOnly=yes',
      '-o BatchMode=yes',
      '-o StrictHostKeyChecking=accept-new',
      `-o UserKnownHostsFile=${shellQuote(knownHostsFile)}`,
    ].join(' ');
    return {
      env: { GIT_SSH_COMMAND: command },
      secrets: [secret],
      dispose: () => rm(dir, { recursive: true, force: true }),
    };
  }
  if (kind !== 'https' && kind !== 'http')
    throw new Error('the credentials secret holds a token, which only an HTTPS URL can use');
  const token = secret.trim();
  const basic = Buffer.from(token.includes(':') ? token : `x-access-token:${token}`, 'utf8').toString('base64');
  return {
    env: {
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'http.extraHeader',
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
    },
    secrets: [token, basic],
    dispose: async () => {},
  };
}
