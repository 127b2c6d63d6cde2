import { parseArgs } from 'node:util';
import { loadConfig, parseRoles } from '../config.ts';
import type { Config } from '../config.ts';
import { PRIVATE_UMASK } from '../store/private-files.ts';
import { exitOnDatabaseLost } from './database-lost.ts';

type Command = (argv: string[]) => Promise<number>;

const USAGE = `agentyard — GitOps factory reconciler, webhook ingress and Run API for cloud agent runs

Usage:
  agentyard serve [--port N] [--factory DIR|GIT_URL] [--roles ingress,api,...]
  agentyard operator [--port N] [--namespace NS]
  agentyard migrate
  agentyard openapi [--write FILE]
  agentyard validate DIR [--format text|json|github]
  agentyard worker --worker-id ID --server URL [--api-key KEY] [--capacity N]
  agentyard <command> --help

Environment: PORT, AGENTYARD_DATA_DIR, DATABASE_URL, AGENTYARD_BOOTSTRAP_API_KEY, AGENTYARD_MASTER_KEY,
AGENTYARD_PUBLIC_URL, AGENTYARD_WEBHOOK_BASE_URL, LOG_LEVEL (see README.md).`;

async function serve(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      factory: { type: 'string' },
      roles: { type: 'string' },
      'data-dir': { type: 'string' },
    },
  });
  const overrides: Partial<Config> = {};
  if (values.port) overrides.port = Number(values.port);
  if (values.host) overrides.host = values.host;
  if (values.factory) overrides.factory = values.factory;
  if (values.roles) overrides.roles = parseRoles(values.roles);
  if (values['data-dir']) overrides.dataDir = values['data-dir'];
  const config = loadConfig(process.env, overrides);
  const { startServer } = await import('../server.ts');
  const server = await startServer(config, { printAdminKey: true });
  server.ctx.log.info(
    { url: server.url, engine: server.ctx.db.engine, roles: [...config.roles] },
    `Agentyard listening on ${server.url} (API ${server.url}/api/v1)`,
  );
  await new Promise<void>((resolve) => {
    const shutdown = (): void => {
      process.off('SIGINT', shutdown);
      process.off('SIGTERM', shutdown);
      stopWatchingDatabase();
      server.ctx.log.info('shutting down');
      void server.stop().finally(resolve);
    };
    process.on('SIGINT', shutdown);
    process.on('SIGTERM', shutdown);
    const stopWatchingDatabase = server.ctx.db.onLost((cause) => {
      process.off('SIGINT', shutdown);
      process.off('SIGTERM', shutdown);
      void exitOnDatabaseLost(server, server.ctx.log, cause);
    });
  });
  return 0;
}

async function migrateCommand(): Promise<number> {
  const config = loadConfig();
  const { openDatabase } = await import('../store/open.ts');
  const { migrate } = await import('../store/migrate.ts');
  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  try {
    const result = await migrate(db);
    console.log(result.applied.length ? `applied: ${result.applied.join(', ')}` : 'database is up to date');
    console.log(`schema version ${result.current} (${db.engine})`);
  } finally {
    await db.close();
  }
  return 0;
}

async function openapiCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { write: { type: 'string' } } });
  const { renderOpenApi } = await import('../http/openapi.ts');
  const text = await renderOpenApi();
  if (values.write) {
    const { writeFile } = await import('node:fs/promises');
    await writeFile(values.write, text);
  } else {
    process.stdout.write(text);
  }
  return 0;
}

/** The command table. Each later capability adds one line. */
export const COMMANDS: Record<string, Command> = {
  validate: async (argv) => (await import('./validate.ts')).validateCommand(argv),
  plan: async (argv) => (await import('./plan.ts')).planCommand(argv),
  apply: async (argv) => (await import('./apply.ts')).applyCommand(argv),
  serve,
  migrate: migrateCommand,
  openapi: openapiCommand,
  worker: async (argv) => (await import('./worker.ts')).workerCommand(argv),
  operator: async (argv) => (await import('./operator.ts')).operatorCommand(argv),
};

/** Commands that keep a data directory (the server's files, workspaces): what they create is private. */
const PRIVATE_COMMANDS = new Set(['serve', 'operator', 'worker', 'migrate']);

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name && PRIVATE_COMMANDS.has(name)) process.umask(PRIVATE_UMASK);
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    console.log(USAGE);
    return name ? 0 : 2;
  }
  const command = COMMANDS[name];
  if (!command) {
    console.error(`agentyard: unknown command "${name}"\n\n${USAGE}`);
    return 2;
  }
  return command(rest);
}
