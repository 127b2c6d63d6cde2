/**
 * `agentyard worker --worker-id ID --server URL [--token TOKEN | --api-key KEY] [--capacity N]`: a self-hosted
 * worker that connects out to a server and runs the team's runs whose `worker_host` is its ID
 * (docs/worker-protocol.md).
 */
import path from 'node:path';
import { parseCommandLine } from './args.ts';

const USAGE = `Usage: agentyard worker --worker-id ID --server URL [--token TOKEN | --api-key KEY] [--capacity N]
                        [--harnesses claude,codex,gemini,command,agentyard] [--data-dir DIR]

  --worker-id   the ID runs name in worker_host / workerHost (case-sensitive)
  --server      the server's base URL (http(s)://host:port, with or without /api/v1)
  --token       a worker token a team admin created for this worker id (POST /api/v1/workers/tokens;
                or AGENTYARD_WORKER_TOKEN)
  --api-key     instead of a token: a team admin's API key (or AGENTYARD_API_KEY, WARP_API_KEY)
  --capacity    runs executed at once (default 2)
  --harnesses   harnesses this worker runs (default AGENTYARD_HARNESSES, else claude,codex,gemini)
  --data-dir    workspaces go to DIR/workspaces (default AGENTYARD_DATA_DIR, else .agentyard-worker)

Harness executables: AGENTYARD_HARNESS_CLAUDE_BIN, _CODEX_BIN, _GEMINI_BIN, _COMMAND_BIN (docs/harnesses.md).
The built-in agent (agentyard) uses this worker's AGENTYARD_OPENAI_BASE_URL, _API_KEY and _MODEL.
Provider keys in this worker's environment (ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY...) reach the
agents of runs whose harness auth is workerEnvironment.`;

export async function workerCommand(argv: string[]): Promise<number> {
  const { values } = parseCommandLine({
    args: argv,
    options: {
      'worker-id': { type: 'string' },
      server: { type: 'string' },
      token: { type: 'string' },
      'api-key': { type: 'string' },
      capacity: { type: 'string' },
      harnesses: { type: 'string' },
      'data-dir': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const workerId = values['worker-id'];
  const server = values.server ?? process.env.AGENTYARD_SERVER_URL;
  const credential =
    values.token ??
    values['api-key'] ??
    process.env.AGENTYARD_WORKER_TOKEN ??
    process.env.AGENTYARD_API_KEY ??
    process.env.WARP_API_KEY;
  if (!workerId || !server || !credential) {
    console.error(
      `agentyard worker: --worker-id, --server and a worker token (or admin API key) are required\n\n${USAGE}`,
    );
    return 2;
  }
  const capacity = Number(values.capacity ?? '2');
  if (!Number.isInteger(capacity) || capacity < 1 || capacity > 256) {
    console.error('agentyard worker: --capacity must be an integer from 1 to 256');
    return 2;
  }
  const { executionSettings, PROVIDER_KEY_VARS } = await import('../execution/settings.ts');
  const { WorkerClient } = await import('../workers/client.ts');
  const { WORKER_ID } = await import('../workers/protocol.ts');
  if (!WORKER_ID.test(workerId)) {
    console.error('agentyard worker: --worker-id must be 1-63 characters of [A-Za-z0-9._-]');
    return 2;
  }
  const env = { ...process.env };
  if (values.harnesses) env.AGENTYARD_HARNESSES = values.harnesses;
  else env.AGENTYARD_HARNESSES ??= 'claude,codex,gemini';
  const dataDir = path.resolve(values['data-dir'] ?? process.env.AGENTYARD_DATA_DIR ?? '.agentyard-worker');
  const { makeDataDirPrivate } = await import('../store/private-files.ts');
  await makeDataDirPrivate(dataDir);
  const settings = executionSettings(dataDir, env, {
    concurrency: capacity,
    serverUrl: () => server,
    passEnv: [
      ...PROVIDER_KEY_VARS,
      ...(env.AGENTYARD_AGENT_PASS_ENV ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ],
  });
  const line = (level: string) => (msg: string, fields?: Record<string, unknown>) =>
    process.stderr.write(`${new Date().toISOString()} ${level} ${msg}${fields ? ` ${JSON.stringify(fields)}` : ''}\n`);
  const client = new WorkerClient({
    serverUrl: server,
    apiKey: credential,
    workerId,
    capacity,
    settings,
    version: 'agentyard-worker/1',
    log: { info: line('info'), warn: line('warn') },
  });
  const { describeSandbox } = await import('../execution/sandbox/index.ts');
  const sandbox = await describeSandbox(settings.sandbox);
  line(sandbox.level)(sandbox.message);
  void client.start();
  await new Promise<void>((resolve) => {
    const shutdown = () => {
      process.off('SIGINT', shutdown);
      process.off('SIGTERM', shutdown);
      void client.stop().finally(resolve);
    };
    process.on('SIGINT', shutdown);
    process.on('SIGTERM', shutdown);
  });
  return 0;
}
