import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config.ts';
import type { Config } from '../../src/config.ts';
import type { CompositionOptions } from '../../src/composition.ts';
import { createLogger } from '../../src/log.ts';
import type { Logger } from '../../src/kernel/log.ts';
import { startServer } from '../../src/server.ts';
import type { RunningServer } from '../../src/server.ts';
import { generateApiKey } from '../../src/identity/api-keys.ts';
import { createTestDatabase } from './db.ts';
import type { Engine, TestDatabase } from './db.ts';

/** Every test server shares one master key, so that several servers can share one database. */
export const TEST_MASTER_KEY = 'a'.repeat(64);

export interface TestServer {
  engine: Engine;
  /** http://127.0.0.1:<port> */
  url: string;
  /** `${url}/api/v1` */
  apiUrl: string;
  adminKey: string;
  server: RunningServer;
  database: TestDatabase;
  dataDir: string;
  /** Authenticated JSON request against the API (path relative to /api/v1). */
  api(
    method: string,
    apiPath: string,
    body?: unknown,
    key?: string,
    headers?: Record<string, string>,
  ): Promise<ApiResponse>;
  close(): Promise<void>;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export interface TestServerOptions {
  config?: Partial<Config>;
  /** How the composition root builds the server's services (execution settings, ingress limits, a clock…). */
  compose?: CompositionOptions;
  /** Reuse a database (a second process on the same PostgreSQL database, or a restart). */
  database?: TestDatabase;
  /** The server's logger (silent unless AGENTYARD_TEST_LOG names a level). */
  log?: Logger;
}

export async function request(
  url: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...(init.headers ?? {}) };
  let body: string | undefined;
  if (init.body !== undefined) {
    body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(url, { method: init.method ?? 'GET', headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/** A real server on a loopback port with its own fresh database on the engine. */
export async function startTestServer(engine: Engine, options: TestServerOptions = {}): Promise<TestServer> {
  const database = options.database ?? (await createTestDatabase(engine));
  const dataDir = mkdtempSync(path.join(tmpdir(), 'agentyard-data-'));
  const adminKey = options.config?.bootstrapApiKey ?? generateApiKey();
  const config = loadConfig(
    {},
    {
      port: 0,
      host: '127.0.0.1',
      dataDir,
      bootstrapApiKey: adminKey,
      logLevel: 'silent',
      masterKey: TEST_MASTER_KEY,
      ...options.config,
    },
  );
  const server = await startServer(config, {
    db: database.db,
    log: options.log ?? createLogger(process.env.AGENTYARD_TEST_LOG ?? 'silent'),
    ...(options.compose ? { compose: options.compose } : {}),
  });
  // The public URL has to name the real port, which is known only after listen.
  server.ctx.config.publicUrl = options.config?.publicUrl ?? server.url;
  server.ctx.config.webhookBaseUrl = options.config?.webhookBaseUrl ?? server.url;
  const apiUrl = `${server.url}/api/v1`;
  return {
    engine,
    url: server.url,
    apiUrl,
    adminKey,
    server,
    database,
    dataDir,
    api: (method, apiPath, body, key = adminKey, headers = {}) =>
      request(`${apiUrl}${apiPath}`, { method, body, headers: { authorization: `Bearer ${key}`, ...headers } }),
    async close() {
      await server.stop();
      if (!options.database) await database.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
