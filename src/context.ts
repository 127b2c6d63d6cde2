import type { Config } from './config.ts';
import type { Cipher, KeyAuthenticator } from './kernel/caller.ts';
import type { Bus } from './kernel/bus.ts';
import type { Db } from './kernel/db.ts';
import type { Logger } from './kernel/log.ts';

/** What every module gets: the database, configuration, logger and the cross-process bus. */
export interface ServiceContext {
  db: Db;
  config: Config;
  log: Logger;
  authenticator: KeyAuthenticator;
  bus: Bus;
  /** Encrypts secret values at rest with the instance master key. */
  cipher: Cipher;
}
