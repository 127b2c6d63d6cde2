import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from './kernel/log.ts';
import type { Config } from './config.ts';
import { buildApp } from './http/app.ts';
import { compose, startInOrder } from './composition.ts';
import type { CompositionOptions, Services } from './composition.ts';
import type { ServiceContext } from './context.ts';
import type { AppInstance } from './plugin.ts';
import { AuthThrottle } from './identity/auth-throttle.ts';
import { Authenticator, bootstrapIdentity } from './identity/service.ts';
import { createLogger } from './log.ts';
import { Bus } from './kernel/bus.ts';
import type { Db } from './kernel/db.ts';
import { prepareDatabase } from './schema.ts';
import { openDatabase } from './store/open.ts';
import { makeDataDirPrivate } from './store/private-files.ts';
import { SecretCipher, loadMasterKey } from './secrets/crypto.ts';

export interface RunningServer {
  app: AppInstance;
  /** Every service of this server, built by the composition root (src/composition.ts). */
  services: Services;
  /** The same object as `services`, for code that needs only the kernel context. */
  ctx: Services;
  /** Base URL the server listens on (http://host:port). */
  url: string;
  /** The admin key when this start generated it. */
  generatedAdminKey: string | undefined;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** An open database (tests); otherwise opened from the configuration. */
  db?: Db;
  log?: Logger;
  /** How the composition root builds the services (tests, benchmarks). */
  compose?: CompositionOptions;
  /** Listen on the configured port (default true). */
  listen?: boolean;
  /** Print the generated admin key to stdout (the `serve` command). */
  printAdminKey?: boolean;
}

async function writeAdminKeyFile(dataDir: string, key: string): Promise<string> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(dataDir, 'admin.key');
  await writeFile(file, `${key}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
  return file;
}

/** The start-up warning for a server running as `uid` (process.getuid; undefined on Windows), if it is root. */
export function rootWarning(uid: number | undefined): string | undefined {
  if (uid !== 0) return undefined;
  return (
    'running as root: whatever goes wrong in this process (a bug, an agent that gets out of its sandbox, a ' +
    'run without one) can change the whole machine; run Agentyard as an ordinary user (the image runs as ' +
    'uid 10001; docs/security.md)'
  );
}

/** Opens the database, migrates, bootstraps identity, builds the app, starts background work and listens. */
export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  const log = options.log ?? createLogger(config.logLevel, config.logFormat);
  const asRoot = rootWarning(process.getuid?.());
  if (asRoot) log.warn(asRoot);
  const tightened = await makeDataDirPrivate(config.dataDir);
  if (tightened.paths.length)
    log.warn(
      { dataDir: config.dataDir, tightened: tightened.paths.length, first: tightened.paths.slice(0, 5) },
      'the data directory held files other users could read or enter: group and world permissions removed',
    );
  const db = options.db ?? (await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir }));
  const ownsDb = options.db === undefined;
  try {
    const migrated = await prepareDatabase(db);
    if (migrated.applied.length) {
      // A count and the last one: a first start applies every migration, too many names for a start-up line.
      const last = migrated.applied[migrated.applied.length - 1];
      log.info({ applied: migrated.applied.length, current: last }, `database migrated to ${last}`);
    }
    for (const set of migrated.functions) {
      if (set.status === 'installed') log.info({ set: set.name, version: set.version }, 'database functions installed');
      if (set.status === 'newer')
        log.warn({ set: set.name, version: set.version }, 'a newer release installed these database functions');
    }
    const boot = await bootstrapIdentity(db, config.bootstrapApiKey);
    if (boot.generatedKey) {
      const file = await writeAdminKeyFile(config.dataDir, boot.generatedKey);
      if (options.printAdminKey) {
        process.stdout.write(`\nAdmin API key (shown once, also written to ${file}):\n\n  ${boot.generatedKey}\n\n`);
      }
    }
    const bus = new Bus(db);
    await bus.start();
    const cipher = new SecretCipher(await loadMasterKey(config.masterKey, config.dataDir));
    const authenticator = new Authenticator(db, undefined, new AuthThrottle(config.authFailureLimit));
    const ctx: ServiceContext = { db, config, log, authenticator, bus, cipher };
    const { services, plugins, startList } = compose(ctx, options.compose);
    const app = await buildApp(services, plugins);
    let stopComponents: () => Promise<void> = async () => {};
    let url = config.publicUrl;
    try {
      stopComponents = await startInOrder(startList(config.roles), log);
      if (options.listen !== false) {
        const address = await app.listen({ port: config.port, host: config.host });
        url = address.replace('[::]', 'localhost').replace('0.0.0.0', '127.0.0.1');
        // With port 0 (tests) the public URLs can name the real port only now.
        if (/:0$/.test(config.publicUrl)) config.publicUrl = url;
        if (/:0$/.test(config.webhookBaseUrl)) config.webhookBaseUrl = url;
      } else {
        await app.ready();
      }
    } catch (err) {
      // A port in use (or a module failing to start) must not leave background loops running.
      await stopComponents();
      await app.close().catch(() => {});
      await bus.stop();
      throw err;
    }
    let stopped = false;
    return {
      app,
      services,
      ctx: services,
      url,
      generatedAdminKey: boot.generatedKey,
      async stop() {
        if (stopped) return;
        stopped = true;
        await stopComponents();
        await app.close();
        await bus.stop();
        if (ownsDb) await db.close();
      },
    };
  } catch (err) {
    if (ownsDb) await db.close().catch(() => {});
    throw err;
  }
}
