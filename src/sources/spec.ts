import path from 'node:path';
import { AppError } from '../kernel/errors.ts';
import { SECRET_NAME, SECRET_NAME_RULE } from '../secrets/service.ts';
import type { SourceSpec } from './types.ts';
import { classifyGitUrl, sanitizeUrl } from './url.ts';

export const DEFAULT_BRANCH = 'main';
export const DEFAULT_POLL_INTERVAL_SECONDS = 60;
export const MAX_POLL_INTERVAL_SECONDS = 86_400;

/** The `source` member of `POST /factories`, before defaults. */
export interface SourceInput {
  type?: 'git' | 'directory' | 'managed' | undefined;
  url?: string | undefined;
  branch?: string | undefined;
  path?: string | undefined;
  poll_interval_seconds?: number | undefined;
  credentials_secret?: string | undefined;
  push_secret?: string | undefined;
  github_repository?: string | undefined;
}

const GITHUB_REPOSITORY = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\/[A-Za-z0-9._-]{1,100}$/;

/** `git check-ref-format --branch` rules, in short. */
const BRANCH = /^(?!-)(?!.*\.\.)(?!.*\/\/)(?!.*@\{)(?!.*\.lock$)(?!.*\/$)(?!.*\.$)[^\s~^:?*[\\\x00-\x1f\x7f]+$/;

function checkSecretRef(field: string, value: string | undefined): string | null {
  if (value === undefined || value === '') return null;
  if (!SECRET_NAME.test(value))
    throw new AppError('invalid_request', `source.${field} "${value}" must be ${SECRET_NAME_RULE}`);
  return value;
}

/** A repository sub-path: relative, `/`-separated, no `..`; '' and '.' mean the root. */
export function normalizeSubPath(value: string | undefined): string | null {
  if (value === undefined) return null;
  const trimmed = value
    .trim()
    .replace(/\\/g, '/')
    .replace(/^\.?\/+/, '')
    .replace(/\/+$/, '');
  if (trimmed === '' || trimmed === '.') return null;
  const segments = trimmed.split('/');
  if (segments.some((s) => s === '..' || s === '' || s === '.')) {
    throw new AppError(
      'invalid_request',
      `source.path "${value}" must be a relative directory inside the repository, without "." or ".." segments`,
    );
  }
  return segments.join('/');
}

/** Validates a source and fills in its defaults; relative local paths resolve against `cwd`. */
export function normalizeSourceSpec(input: SourceInput | undefined, cwd = process.cwd()): SourceSpec {
  const type = input?.type ?? 'managed';
  if (type === 'managed') {
    const extra = Object.entries(input ?? {}).find(([k, v]) => k !== 'type' && v !== undefined);
    if (extra) throw new AppError('invalid_request', `source.${extra[0]} is not a setting of a managed source`);
    return { type: 'managed' };
  }
  if (type === 'directory') {
    if (!input?.path) throw new AppError('invalid_request', 'source.path is required for a directory source');
    for (const key of [
      'url',
      'branch',
      'poll_interval_seconds',
      'credentials_secret',
      'push_secret',
      'github_repository',
    ] as const) {
      if (input[key] !== undefined)
        throw new AppError('invalid_request', `source.${key} is not a setting of a directory source`);
    }
    return { type: 'directory', path: path.resolve(cwd, input.path) };
  }
  if (type !== 'git') throw new AppError('invalid_request', `source.type must be git, directory or managed`);
  const url = input?.url?.trim();
  if (!url) throw new AppError('invalid_request', 'source.url is required for a git source');
  const kind = classifyGitUrl(url);
  if (!kind) {
    throw new AppError(
      'invalid_request',
      `source.url "${sanitizeUrl(url)}" must be an https://, http://, ssh:// (or user@host:path), file:// URL or an absolute local path`,
    );
  }
  if (
    kind !== 'local' &&
    kind !== 'file' &&
    /^[a-z][a-z0-9+.-]*:\/\/[^/@]*@/i.test(url) &&
    /:\/\/[^/@]*:[^/@]*@/.test(url)
  ) {
    throw new AppError(
      'invalid_request',
      'source.url must not hold a password or token; put it in a managed secret named by source.credentials_secret',
    );
  }
  const branch = input?.branch?.trim() || DEFAULT_BRANCH;
  if (!BRANCH.test(branch))
    throw new AppError('invalid_request', `source.branch "${branch}" is not a valid branch name`);
  const interval = input?.poll_interval_seconds ?? DEFAULT_POLL_INTERVAL_SECONDS;
  if (!Number.isInteger(interval) || interval < 0 || interval > MAX_POLL_INTERVAL_SECONDS) {
    throw new AppError(
      'invalid_request',
      `source.poll_interval_seconds must be an integer from 0 (never poll) to ${MAX_POLL_INTERVAL_SECONDS}`,
    );
  }
  const githubRepository = input?.github_repository?.trim() || null;
  if (githubRepository !== null && (!GITHUB_REPOSITORY.test(githubRepository) || githubRepository.endsWith('.git'))) {
    throw new AppError(
      'invalid_request',
      `source.github_repository "${githubRepository}" must be a GitHub repository as owner/name`,
    );
  }
  return {
    type: 'git',
    url: kind === 'local' ? path.resolve(cwd, url) : url,
    branch,
    path: normalizeSubPath(input?.path),
    poll_interval_seconds: interval,
    credentials_secret: checkSecretRef('credentials_secret', input?.credentials_secret),
    push_secret: checkSecretRef('push_secret', input?.push_secret),
    ...(githubRepository ? { github_repository: githubRepository } : {}),
  };
}

/** Is `target` (from `serve --factory`) a git URL rather than a directory? */
export function looksLikeGitUrl(target: string): boolean {
  const kind = classifyGitUrl(target);
  return kind !== undefined && kind !== 'local' ? true : /\.git\/?$/.test(target);
}
