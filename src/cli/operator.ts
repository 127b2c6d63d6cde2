import { parseCommandLine } from './args.ts';
import { loadConfig } from '../config.ts';
import type { Config } from '../config.ts';
import { exitOnDatabaseLost } from './database-lost.ts';

export const OPERATOR_USAGE = `agentyard operator [--port N] [--host H] [--namespace NS] [--lease-name NAME] [--identity ID]

Runs the Kubernetes operator: the webhook ingress and the API on PORT (every replica), and, on the replica
holding the coordination.k8s.io Lease, the Factory controller, the reconcile loops and the Job executor.
Reads KUBECONFIG, or the pod's service account. See docs/kubernetes.md for the environment it reads.`;

/**
 * `agentyard operator`: exits 0 after SIGINT/SIGTERM, 1 when the leader lease was lost or the embedded
 * database's thread died (the pod restarts).
 */
export async function operatorCommand(argv: string[]): Promise<number> {
  const { values } = parseCommandLine({
    args: argv,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      namespace: { type: 'string' },
      'lease-name': { type: 'string' },
      identity: { type: 'string' },
      'data-dir': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(OPERATOR_USAGE);
    return 0;
  }
  const overrides: Partial<Config> = {};
  if (values.port) overrides.port = Number(values.port);
  if (values.host) overrides.host = values.host;
  if (values['data-dir']) overrides.dataDir = values['data-dir'];
  const config = loadConfig(process.env, overrides);
  const { operatorSettingsFromEnv, startOperator } = await import('../operator/manager.ts');
  const { loadKubeConfig } = await import('../operator/kube.ts');
  const settings = operatorSettingsFromEnv({
    ...process.env,
    ...(values.namespace ? { AGENTYARD_NAMESPACE: values.namespace } : {}),
    ...(values['lease-name'] ? { AGENTYARD_LEASE_NAME: values['lease-name'] } : {}),
    ...(values.identity ? { AGENTYARD_IDENTITY: values.identity } : {}),
  });
  const operator = await startOperator({ config, settings, kubeConfig: loadKubeConfig() });
  const log = operator.server.ctx.log;
  log.info(
    { url: operator.server.url, identity: settings.identity, lease: `${settings.namespace}/${settings.leaseName}` },
    `Agentyard operator ${settings.identity} listening on ${operator.server.url}; electing a leader on Lease ${settings.namespace}/${settings.leaseName}`,
  );
  const stopWatchingDatabase = operator.server.ctx.db.onLost((cause) => void exitOnDatabaseLost(operator, log, cause));
  const end = await new Promise<'signal' | 'lost'>((resolve) => {
    const shutdown = (): void => resolve('signal');
    process.once('SIGINT', shutdown);
    process.once('SIGTERM', shutdown);
    void operator.ended.then((e) => {
      if (e === 'lost') resolve('lost');
    });
  });
  stopWatchingDatabase();
  log.info(end === 'lost' ? 'leader lease lost: stopping' : 'shutting down');
  await operator.stop();
  return end === 'lost' ? 1 : 0;
}
