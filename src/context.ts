import type { Config } from './config.ts';
import type { Authenticator } from './identity/service.ts';
import type { Bus } from './kernel/bus.ts';
import type { Db } from './kernel/db.ts';
import type { Logger } from './kernel/log.ts';
import type { SecretCipher } from './secrets/crypto.ts';

/** What every module gets: the database, configuration, logger and the cross-process bus. */
export interface ServiceContext {
  db: Db;
  config: Config;
  log: Logger;
  authenticator: Authenticator;
  bus: Bus;
  /** Encrypts secret values at rest with the instance master key. */
  cipher: SecretCipher;
}
