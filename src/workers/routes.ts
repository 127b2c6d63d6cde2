import type { AppInstance } from '../plugin.ts';
import type { WorkerHub } from './hub.ts';
import { WORKER_CONNECT_PATH } from './protocol.ts';

/** Self-hosted workers connect by WebSocket upgrade on WORKER_CONNECT_PATH; other upgrades are refused. */
export async function registerWorkerConnectRoute(app: AppInstance, hub: WorkerHub): Promise<void> {
  const server = app.server;
  server.on('upgrade', (request, socket, head) => {
    const path = (request.url ?? '').split('?')[0];
    if (path === WORKER_CONNECT_PATH) return hub.handleUpgrade(request, socket, head);
    if (server.listenerCount('upgrade') === 1) socket.destroy();
  });
}
