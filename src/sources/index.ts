import path from 'node:path';
import type { SecretProvider } from '../secrets/provider.ts';
import type { Db } from '../kernel/db.ts';
import { DirectorySource } from './directory.ts';
import { GitSource } from './git.ts';
import { ManagedRepository } from './managed.ts';
import type { SourceLimits } from './limits.ts';
import { SourceError } from './types.ts';
import type { Source, SourceSpec } from './types.ts';
import { sanitizeUrl } from './url.ts';
import type { SourceUrlPolicy } from './url-policy.ts';

export type {
  Source,
  SourceSnapshot,
  SourceSpec,
  SourceCommit,
  GitSourceSpec,
  DirectorySourceSpec,
  ManagedSourceSpec,
} from './types.ts';
export { SourceError, isSourceError } from './types.ts';
export { DirectorySource } from './directory.ts';
export { GitSource } from './git.ts';
export { ManagedRepository, MANAGED_BRANCH } from './managed.ts';
export { normalizeSourceSpec, looksLikeGitUrl } from './spec.ts';
export type { SourceInput } from './spec.ts';
export { sanitizeUrl } from './url.ts';
export { SourceUrlPolicy } from './url-policy.ts';
export { DEFAULT_SOURCE_LIMITS } from './limits.ts';
export type { SourceLimits } from './limits.ts';

export interface SourceDeps {
  dataDir: string;
  secrets: SecretProvider;
  /** Where managed factories' commits are recorded. */
  db: Db;
  /** Hosts git sources may reach (checked before every fetch); any when absent. */
  urlPolicy?: SourceUrlPolicy | undefined;
  /** What git and directory sources may hold; the defaults when absent. */
  limits?: SourceLimits | undefined;
}

export function managedRepositoryDir(dataDir: string, factoryId: string): string {
  return path.join(dataDir, 'managed', `${factoryId}.git`);
}

/** The source of one factory; git credentials are read from the secret provider at every fetch. */
export function createSource(factory: { id: string; team_id: string; source: SourceSpec }, deps: SourceDeps): Source {
  const spec = factory.source;
  switch (spec.type) {
    case 'git':
      return new GitSource({
        spec,
        dir: path.join(deps.dataDir, 'sources', factory.id),
        ...(deps.urlPolicy ? { policy: deps.urlPolicy } : {}),
        ...(deps.limits ? { limits: deps.limits } : {}),
        credentials: async () => {
          if (!spec.credentials_secret) return undefined;
          const value = await deps.secrets.get(factory.team_id, spec.credentials_secret);
          if (value === undefined) {
            throw new SourceError(
              'terminal',
              'CredentialsNotFound',
              `fetch ${sanitizeUrl(spec.url)}: no managed secret named ${spec.credentials_secret} (source.credentials_secret)`,
            );
          }
          return value;
        },
      });
    case 'directory':
      return new DirectorySource(spec.path, deps.limits);
    case 'managed':
      return new ManagedRepository(managedRepositoryDir(deps.dataDir, factory.id), {
        db: deps.db,
        factoryId: factory.id,
      });
  }
}
