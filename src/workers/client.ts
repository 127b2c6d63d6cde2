/**
 * The worker side of the protocol (`agentyard worker`): connects out to the server, announces itself, runs
 * the assignments it gets with the same runner as the service's executors, streams their events back, and
 * reconnects with backoff when the connection drops (running agents go on; their leases are renewed by the
 * new connection, and messages written meanwhile are sent after the new `welcome`).
 */
import { hostname } from 'node:os';
import WebSocket from 'ws';
import { EventPipe } from '../execution/event-pipe.ts';
import type { ExecutionOutcome, Assignment } from '../execution/assignment.ts';
import { ExecutionRunner } from '../execution/runner.ts';
import type { ExecutionSettings } from '../execution/settings.ts';
import { sweepWorkspaces } from '../execution/workspace.ts';
import { WORKER_CONNECT_PATH, WORKER_PROTOCOL_VERSION } from './protocol.ts';
import type { ServerMessage, WorkerMessage } from './protocol.ts';

export interface WorkerLog {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
}

export interface WorkerClientOptions {
  serverUrl: string;
  /** What the worker connects with: a worker token, or a team admin's API key. */
  apiKey: string;
  workerId: string;
  capacity: number;
  settings: ExecutionSettings;
  version: string;
  log: WorkerLog;
  /** First reconnect delay; doubles up to `maxBackoffMs` (with jitter). */
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

/** The WebSocket URL of a server's worker endpoint, from its base URL (with or without `/api/v1`). */
export function connectUrl(serverUrl: string): string {
  const url = new URL(serverUrl);
  url.protocol = url.protocol === 'https:' ? 'wss:' : url.protocol === 'http:' ? 'ws:' : url.protocol;
  url.pathname = `${url.pathname.replace(/\/+$/, '').replace(/\/api\/v1$/, '')}${WORKER_CONNECT_PATH}`;
  url.search = '';
  return url.toString();
}

const MAX_OUTBOX = 10_000;

export class WorkerClient {
  readonly #o: WorkerClientOptions;
  readonly #runners = new Map<string, ExecutionRunner>();
  readonly #outbox: WorkerMessage[] = [];
  #ws: WebSocket | undefined;
  #welcomed = false;
  #heartbeat: NodeJS.Timeout | undefined;
  #sweeper: NodeJS.Timeout | undefined;
  #reconnect: NodeJS.Timeout | undefined;
  #backoff: number;
  #stopped = false;
  #connected: (() => void) | undefined;
  readonly #finished = new Set<Promise<void>>();

  constructor(options: WorkerClientOptions) {
    this.#o = options;
    this.#backoff = options.minBackoffMs ?? 500;
  }

  get running(): number {
    return this.#runners.size;
  }

  /** Connects (and keeps reconnecting); resolves after the first welcome. */
  start(): Promise<void> {
    const first = new Promise<void>((resolve) => {
      this.#connected = resolve;
    });
    void this.#sweep();
    this.#sweeper = setInterval(() => void this.#sweep(), 10 * 60_000);
    this.#sweeper.unref();
    this.#connect();
    return first;
  }

  async #sweep(): Promise<void> {
    const { workspaceRoot, workspaceRetentionMs, configRoot } = this.#o.settings;
    const now = Date.now();
    await sweepWorkspaces(
      workspaceRoot,
      (id, modifiedAt) => this.#runners.has(id) || now - modifiedAt.getTime() <= workspaceRetentionMs,
    );
    // configuration directories outlive their execution only when a runner died before removing its own
    await sweepWorkspaces(configRoot, (id) => this.#runners.has(id));
  }

  #connect(): void {
    if (this.#stopped) return;
    const url = connectUrl(this.#o.serverUrl);
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${this.#o.apiKey}` }, handshakeTimeout: 10_000 });
    this.#ws = ws;
    this.#welcomed = false;
    ws.on('open', () => {
      const settings = this.#o.settings;
      this.#sendNow({
        type: 'hello',
        protocol: WORKER_PROTOCOL_VERSION,
        worker_id: this.#o.workerId,
        capacity: this.#o.capacity,
        harnesses: settings.harnesses,
        default_harness: settings.defaultHarness ?? null,
        version: this.#o.version,
        host: hostname(),
        running: this.#unfinished(),
      });
    });
    ws.on('message', (data) => {
      let msg: ServerMessage;
      try {
        msg = JSON.parse(data.toString()) as ServerMessage;
      } catch {
        return;
      }
      this.#handle(msg);
    });
    ws.on('unexpected-response', (_req, res) => {
      this.#o.log.warn(`the server refused the connection: HTTP ${res.statusCode}`, { url });
    });
    ws.on('close', (code, reason) => {
      if (this.#heartbeat) clearInterval(this.#heartbeat);
      this.#heartbeat = undefined;
      this.#welcomed = false;
      if (this.#stopped) return;
      const delay = Math.round(this.#backoff * (0.75 + Math.random() * 0.5));
      this.#o.log.warn(
        `disconnected (${code}${reason.length ? ` ${reason.toString()}` : ''}); reconnecting in ${delay} ms`,
      );
      this.#backoff = Math.min(this.#backoff * 2, this.#o.maxBackoffMs ?? 30_000);
      this.#reconnect = setTimeout(() => this.#connect(), delay);
    });
    ws.on('error', () => {
      // 'close' follows
    });
  }

  /**
   * Executions the server must still count on: those running here, and those that ended while disconnected
   * (their end waits in the outbox). A server adopts only what hello names; any other end it would drop.
   */
  #unfinished(): string[] {
    const ids = new Set(this.#runners.keys());
    for (const m of this.#outbox) if (m.type === 'completed' || m.type === 'failed') ids.add(m.execution_id);
    return [...ids];
  }

  #sendNow(msg: WorkerMessage): boolean {
    const ws = this.#ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return false;
    ws.send(JSON.stringify(msg));
    return true;
  }

  /** Messages about executions wait for a welcomed connection; heartbeats do not. */
  #send(msg: WorkerMessage): void {
    if (this.#welcomed && this.#sendNow(msg)) return;
    if (this.#outbox.length >= MAX_OUTBOX) {
      // the oldest event goes first; the start and end of an execution are kept
      const oldestEvent = this.#outbox.findIndex((m) => m.type === 'event');
      this.#outbox.splice(Math.max(oldestEvent, 0), 1);
    }
    this.#outbox.push(msg);
  }

  #handle(msg: ServerMessage): void {
    switch (msg.type) {
      case 'welcome': {
        this.#welcomed = true;
        this.#backoff = this.#o.minBackoffMs ?? 500;
        for (const id of msg.stale) void this.#runners.get(id)?.stop('lost');
        const pending = this.#outbox.splice(0);
        for (const m of pending) this.#send(m);
        this.#heartbeat = setInterval(
          () => this.#sendNow({ type: 'heartbeat', load: this.#runners.size, running: [...this.#runners.keys()] }),
          msg.heartbeat_ms,
        );
        this.#heartbeat.unref();
        this.#sendNow({ type: 'heartbeat', load: this.#runners.size, running: [...this.#runners.keys()] });
        this.#o.log.info(`connected to ${connectUrl(this.#o.serverUrl)} as worker "${this.#o.workerId}"`, {
          connection: msg.connection_id,
        });
        this.#connected?.();
        this.#connected = undefined;
        break;
      }
      case 'assignment':
        this.#assignment(msg.execution_id, msg.plan);
        break;
      case 'cancel':
        void this.#runners.get(msg.execution_id)?.stop(msg.reason);
        break;
      case 'followup':
        this.#runners.get(msg.execution_id)?.deliverFollowup(msg.followup);
        break;
      case 'error':
        this.#o.log.warn(`server error: ${msg.code}: ${msg.message}`);
        break;
    }
  }

  #assignment(executionId: string, assignment: Assignment): void {
    const settings = this.#o.settings;
    if (this.#stopped) return this.#send({ type: 'rejected', execution_id: executionId, reason: 'shutting_down' });
    if (this.#runners.size >= this.#o.capacity)
      return this.#send({ type: 'rejected', execution_id: executionId, reason: 'at_capacity' });
    if (!settings.harnesses.includes(assignment.harness)) {
      return this.#send({
        type: 'rejected',
        execution_id: executionId,
        reason: 'harness_unavailable',
        message: `this worker has no ${assignment.harness} harness`,
      });
    }
    const pipe = new EventPipe(
      async (events) => this.#send({ type: 'event', execution_id: executionId, events }),
      () => {},
    );
    const runner = new ExecutionRunner(assignment, settings, {
      starting: async ({ workspace }) => {
        this.#send({ type: 'claimed', execution_id: executionId, workspace });
        return true;
      },
      events: (events) => pipe.push(events),
    });
    this.#runners.set(executionId, runner);
    this.#o.log.info(`running ${assignment.runId} (execution ${executionId}, ${assignment.harness})`);
    const done = runner.done.then(async (outcome) => {
      await pipe.drain();
      this.#send(this.#endMessage(executionId, outcome, runner.usage));
      this.#runners.delete(executionId);
      this.#finished.delete(done);
      this.#o.log.info(`finished ${assignment.runId}: ${outcome.kind}`);
    });
    this.#finished.add(done);
  }

  #endMessage(executionId: string, outcome: ExecutionOutcome, usage: Readonly<Record<string, number>>): WorkerMessage {
    const common = {
      execution_id: executionId,
      exit_code: outcome.exitCode,
      usage: { ...usage },
      ...(outcome.agentSessionId ? { agent_session_id: outcome.agentSessionId } : {}),
    };
    if (outcome.kind === 'succeeded') return { type: 'completed', message: outcome.message, ...common };
    return {
      type: 'failed',
      outcome: outcome.kind === 'failed' ? 'failed' : outcome.kind === 'cancelled' ? 'cancelled' : 'error',
      reason: outcome.message,
      ...(outcome.errorCode ? { error_code: outcome.errorCode } : {}),
      ...common,
    };
  }

  /** Stops running agents (their runs end ERROR), says so to the server, and disconnects. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#reconnect) clearTimeout(this.#reconnect);
    if (this.#sweeper) clearInterval(this.#sweeper);
    for (const r of this.#runners.values())
      void r.stop('shutdown', {
        message: `self-hosted worker "${this.#o.workerId}" shut down`,
        errorCode: 'executor_stopped',
      });
    await Promise.all([...this.#finished]);
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    const ws = this.#ws;
    if (ws && ws.readyState === WebSocket.OPEN) {
      await new Promise<void>((resolve) => {
        ws.once('close', () => resolve());
        ws.close(1000, 'worker stopping');
        setTimeout(resolve, 2_000).unref();
      });
    }
  }
}
