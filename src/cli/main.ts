import { readFileSync } from 'node:fs';
import { closest } from '../definitions/levenshtein.ts';
import { loadConfig, parseRoles } from '../config.ts';
import type { Config } from '../config.ts';
import { PRIVATE_UMASK } from '../store/private-files.ts';
import { isParseArgsError, parseCommandLine } from './args.ts';
import { exitOnDatabaseLost } from './database-lost.ts';

type Command = (argv: string[]) => Promise<number>;

/** One synopsis per command of COMMANDS (a test checks that none is missing). */
export const COMMAND_USAGE: Record<string, string> = {
  serve: 'agentyard serve [--port N] [--host ADDR] [--factory DIR|GIT_URL] [--roles ingress,api,...] [--data-dir DIR]',
  operator: 'agentyard operator [--port N] [--host H] [--namespace NS] [--lease-name NAME] [--identity ID]',
  migrate: 'agentyard migrate',
  openapi: 'agentyard openapi [--write FILE]',
  validate: 'agentyard validate DIR [--format text|json|github]',
  plan: 'agentyard plan DIR --factory NAME [--server URL] [--key KEY] [--json]',
  apply: 'agentyard apply DIR --factory NAME [--message TEXT] [--server URL] [--key KEY] [--json]',
  worker: 'agentyard worker --worker-id ID --server URL [--api-key KEY] [--capacity N]',
  bench: 'agentyard bench run|compare SUITE --factory NAME [--judge-model ID] [--server URL] [--key KEY] [--json]',
};

const USAGE = `agentyard — GitOps factory reconciler, webhook ingress and Run API for cloud agent runs

Usage:
  ${Object.values(COMMAND_USAGE).join('\n  ')}
  agentyard <command> --help
  agentyard --version

Environment: PORT, HOST, AGENTYARD_DATA_DIR, DATABASE_URL, AGENTYARD_ROLES, AGENTYARD_BOOTSTRAP_API_KEY,
AGENTYARD_MASTER_KEY, AGENTYARD_PUBLIC_URL, AGENTYARD_WEBHOOK_BASE_URL, LOG_LEVEL (see README.md).
Exit status: 0 success, 1 failure (a refused tree, a failed run of the command), 2 usage problem.`;

const SERVE_HELP = `Usage: ${COMMAND_USAGE.serve}

Runs the server: the API, the webhook ingress, the console, the reconcile loops, the schedules and the
executor (the parts AGENTYARD_ROLES or --roles name). Each option overrides its environment variable.

  --port N          port to listen on (PORT, default 8080; 0 picks a free one)
  --host ADDR       address to listen on (HOST, default 0.0.0.0; 127.0.0.1 for this machine only)
  --factory SOURCE  a factory directory (watched and applied on save) or a git URL to serve
  --roles LIST      ingress,api,controller,executor,scheduler: the parts this process runs (AGENTYARD_ROLES)
  --data-dir DIR    embedded database, admin key, workspaces (AGENTYARD_DATA_DIR, default ./.agentyard)
  -h, --help        this text

Agents run only with a harness: AGENTYARD_HARNESSES (claude, codex, gemini, command) and the model key the
harness reads (ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY, or a factory secret); see README.md.`;

async function serve(argv: string[]): Promise<number> {
  const { values } = parseCommandLine({
    args: argv,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      factory: { type: 'string' },
      roles: { type: 'string' },
      'data-dir': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(SERVE_HELP);
    return 0;
  }
  const overrides: Partial<Config> = {};
  if (values.port !== undefined) {
    const port = Number(values.port);
    if (!/^\d+$/.test(values.port) || port > 65535)
      throw new UsageError(`--port must be 0-65535, got "${values.port}"`);
    overrides.port = port;
  }
  if (values.host) overrides.host = values.host;
  if (values.factory) overrides.factory = values.factory;
  if (values['data-dir']) overrides.dataDir = values['data-dir'];
  let config: Config;
  try {
    if (values.roles) overrides.roles = parseRoles(values.roles);
    config = loadConfig(process.env, overrides);
  } catch (err) {
    // A bad flag or environment variable (PORT, AGENTYARD_ROLES, ...) is a usage problem.
    throw new UsageError((err as Error).message);
  }
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

async function migrateCommand(argv: string[]): Promise<number> {
  parseCommandLine({ args: argv, options: {} });
  const config = loadConfig();
  const { openDatabase } = await import('../store/open.ts');
  const { prepareDatabase } = await import('../schema.ts');
  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  try {
    const result = await prepareDatabase(db);
    console.log(result.applied.length ? `applied: ${result.applied.join(', ')}` : 'database is up to date');
    for (const set of result.functions) console.log(`functions ${set.name} version ${set.version}: ${set.status}`);
    console.log(`schema version ${result.current} (${db.engine})`);
  } finally {
    await db.close();
  }
  return 0;
}

async function openapiCommand(argv: string[]): Promise<number> {
  const { values } = parseCommandLine({ args: argv, options: { write: { type: 'string' } } });
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
  bench: async (argv) => (await import('./bench.ts')).benchCommand(argv),
  serve,
  migrate: migrateCommand,
  openapi: openapiCommand,
  worker: async (argv) => (await import('./worker.ts')).workerCommand(argv),
  operator: async (argv) => (await import('./operator.ts')).operatorCommand(argv),
};

/** Commands that keep a data directory (the server's files, workspaces): what they create is private. */
const PRIVATE_COMMANDS = new Set(['serve', 'operator', 'worker', 'migrate']);

/** A problem with how the command was called: exits 2. */
export class UsageError extends Error {}

/** Commands without a `--help` of their own answer their synopsis. */
const SYNOPSIS_ONLY = new Set(['migrate', 'openapi']);

/** package.json's version, read where the program is installed. */
export function packageVersion(): string {
  const text = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
  return (JSON.parse(text) as { version: string }).version;
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name && PRIVATE_COMMANDS.has(name)) process.umask(PRIVATE_UMASK);
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    console.log(USAGE);
    return name ? 0 : 2;
  }
  if (name === '--version' || name === '-v' || name === 'version') {
    console.log(packageVersion());
    return 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    const option = name.startsWith('-');
    const match = option ? closest(name.replace(/^-+/, ''), ['help', 'version']) : closest(name, Object.keys(COMMANDS));
    const suggestion = match ? `; did you mean "${option ? `--${match}` : match}"?` : '';
    console.error(
      `agentyard: unknown ${option ? 'option' : 'command'} "${name}"${suggestion} (agentyard --help lists the commands)`,
    );
    return 2;
  }
  if (SYNOPSIS_ONLY.has(name) && (rest.includes('--help') || rest.includes('-h'))) {
    console.log(`Usage: ${COMMAND_USAGE[name]}`);
    return 0;
  }
  try {
    return await command(rest);
  } catch (err) {
    if (isParseArgsError(err)) {
      // One line: which option or argument, and where the rest is told.
      console.error(`agentyard ${name}: ${err.message} (agentyard ${name} --help)`);
      return 2;
    }
    if (!(err instanceof UsageError)) throw err;
    console.error(`agentyard ${name}: ${err.message}\nUsage: ${COMMAND_USAGE[name]}`);
    return 2;
  }
}
