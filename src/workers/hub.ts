/**
 * The server side of self-hosted workers: accepts their WebSocket connections (a team admin key, or a worker
 * token for named worker ids), records them, assigns them the team's queued runs whose `worker_host` is their ID
 * and that their registration may receive (docs/security.md, "Self-hosted workers"; claimed in the database like the
 * service's own executors, so one run goes to one worker whatever the number of server processes), and turns
 * their messages into the run's start, events and end. Leases cover workers too: a worker that stops
 * heartbeating (killed, cut off) loses its runs to the reaper.
 */
import { CREDENTIALS_REVOKED_TOPIC, RUNS_QUEUED_TOPIC, RUN_CHANGED_TOPIC } from '../kernel/topics.ts';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { CoalescedPass } from '../kernel/coalesced-pass.ts';
import type { Logger } from '../kernel/log.ts';
import { WebSocketServer } from 'ws';
import type { WebSocket } from 'ws';
import { adapterFor } from '../execution/harnesses/index.ts';
import { claimedAssignments } from '../execution/runner-settings.ts';
import type { ExecutionOutcome } from '../execution/assignment.ts';
import { claimRuns } from '../engine/claim.ts';
import type { ExecutionRecorder } from '../execution/recorder.ts';
import { harnessChoice, isHarnessType } from '../execution/settings.ts';
import { waitingFollowups } from '../execution/sql.ts';
import type { HarnessType } from '../execution/settings.ts';
import type { KeyAuthenticator } from '../kernel/caller.ts';
import { isAppError } from '../kernel/errors.ts';
import { RUN_EVENT_TYPES } from '../engine/events.ts';
import type { SecretProvider } from '../secrets/provider.ts';
import type { Bus } from '../kernel/bus.ts';
import type { Db } from '../kernel/db.ts';
import { newId } from '../kernel/ids.ts';
import { CLOSE_CODES, parseWorkerMessage, WORKER_ID, WORKER_PROTOCOL_VERSION } from './protocol.ts';
import type { HelloMessage, ServerMessage, WorkerMessage } from './protocol.ts';
import * as sql from './sql.ts';
import * as engine from '../engine/engine.ts';
import { Loop } from '../kernel/loop.ts';
import { hashWorkerToken, isWorkerToken } from './tokens.ts';

/**
 * What a connection was registered with, and so what it may receive: a team admin key's connection every run
 * of its team for any worker id (`trusted`); a worker token's only the token's worker ids, and a run acting as
 * a member only when `registrant` (the token's creator) is that member.
 */
interface Registration {
  teamId: string;
  credential: { kind: 'key' | 'token'; id: string };
  /** The worker ids a token names; null: any (an admin key). */
  workerIds: readonly string[] | null;
  trusted: boolean;
  registrant: string;
}

export interface HubDeps {
  db: Db;
  bus: Bus;
  log: Logger;
  authenticator: KeyAuthenticator;
  recorder: ExecutionRecorder;
  secrets: SecretProvider;
  /** The signed session link of a run's session (src/runs/session-link.ts). */
  sessionLink: (sessionId: string) => string;
  /** The factory interface's URL the agents are given (AGENTYARD_PUBLIC_URL); absent: none. */
  factoryMcpUrl?: () => string;
  serverId: string;
  leaseMs: number;
  heartbeatMs: number;
  pollMs: number;
}

interface Assigned {
  runId: string;
  harness: HarnessType;
  followupIds: string[];
  started: boolean;
  delivered: Set<string>;
  cancelSent: boolean;
  /** The worker reported the end: nothing left there to cancel, whatever a check that raced the end says. */
  endReported?: boolean;
  /** Events and the end are recorded in the order the worker sent them. */
  chain: Promise<void>;
}

interface Connection {
  id: string;
  ws: WebSocket;
  teamId: string;
  registration: Registration;
  workerId: string;
  host: string;
  capacity: number;
  harnesses: HarnessType[];
  defaultHarness: HarnessType | undefined;
  assigned: Map<string, Assigned>;
  /** Runs assigned but not yet answered count against capacity; a rejection pauses assignments briefly. */
  pausedUntil: number;
  /** Assignments to this connection, one pass at a time. */
  assignments: CoalescedPass;
}

const HELLO_TIMEOUT_MS = 10_000;
const REPORTABLE: ReadonlySet<string> = new Set(RUN_EVENT_TYPES.filter((t) => t !== 'state'));
const MAX_PAYLOAD = 16 * 1024 * 1024;

export class WorkerHub {
  readonly #deps: HubDeps;
  readonly #wss = new WebSocketServer({ noServer: true, maxPayload: MAX_PAYLOAD });
  readonly #connections = new Map<string, Connection>();
  readonly #unsubscribe: (() => void)[] = [];
  #poller: Loop | undefined;
  #stopped = false;

  constructor(deps: HubDeps) {
    this.#deps = deps;
  }

  /** Connected workers in this process (tests, metrics). */
  get connections(): number {
    return this.#connections.size;
  }

  start(): void {
    const { bus } = this.#deps;
    this.#unsubscribe.push(
      bus.subscribe(RUNS_QUEUED_TOPIC, (data) => {
        const host = (data as { worker_host?: string | null } | null)?.worker_host;
        if (!host) return;
        for (const c of this.#connections.values()) if (c.workerId === host) this.#dispatch(c);
      }),
      bus.subscribe(RUN_CHANGED_TOPIC, (data) =>
        this.#onRunChanged(data as { run_id?: string; state?: string; followup_id?: string } | null),
      ),
      bus.subscribe(CREDENTIALS_REVOKED_TOPIC, (data) =>
        this.#onRevoked(data as { key_id?: string; worker_token_id?: string } | null),
      ),
    );
    this.#poller = new Loop({
      name: 'worker poll',
      everyMs: this.#deps.pollMs,
      atStart: false,
      pass: () => this.#poll(),
      onError: (err) => this.#deps.log.warn({ err }, 'worker poll failed'),
    }).start();
  }

  /** For the HTTP server's `upgrade` event on the connect path. */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const refuse = (status: number, text: string, headers: Record<string, string> = {}, body = text) => {
      const extra = Object.entries(headers)
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('');
      socket.end(
        `HTTP/1.1 ${status} ${text}\r\ncontent-type: text/plain\r\n${extra}connection: close\r\n\r\n${body}\n`,
      );
    };
    if (this.#stopped) return refuse(503, 'Service Unavailable');
    const header = request.headers.authorization;
    const match = header ? /^Bearer\s+(.+)$/i.exec(header) : null;
    if (!match) return refuse(401, 'Unauthorized');
    void this.#register(match[1]!.trim(), request.socket.remoteAddress ?? '').then(
      (registration) => {
        if (registration === 'unknown') return refuse(401, 'Unauthorized');
        if (registration === 'forbidden') return refuse(403, 'Forbidden');
        this.#wss.handleUpgrade(request, socket, head, (ws) =>
          this.#accept(ws, registration, request.socket.remoteAddress ?? ''),
        );
      },
      (err: unknown) =>
        isAppError(err) && err.code === 'rate_limited'
          ? refuse(429, 'Too Many Requests', err.headers, err.message)
          : refuse(500, 'Internal Server Error'),
    );
  }

  /** A worker connects with a worker token, or a team admin key; a member's key registers nothing. */
  async #register(bearer: string, address: string): Promise<Registration | 'unknown' | 'forbidden'> {
    if (isWorkerToken(bearer)) {
      const hash = hashWorkerToken(bearer);
      const token = await this.#deps.authenticator.checkFrom(hash, address, () =>
        sql.useWorkerToken(this.#deps.db, hash),
      );
      if (!token) return 'unknown';
      return {
        teamId: token.team_id,
        credential: { kind: 'token', id: token.id },
        workerIds: token.worker_ids,
        trusted: false,
        registrant: token.created_by,
      };
    }
    const principal = await this.#deps.authenticator.authenticateFrom(bearer, address);
    if (!principal) return 'unknown';
    if (principal.role !== 'admin' && !principal.instanceAdmin) return 'forbidden';
    return {
      teamId: principal.teamId,
      credential: { kind: 'key', id: principal.keyId },
      workerIds: null,
      trusted: true,
      registrant: principal.subject.id,
    };
  }

  #accept(ws: WebSocket, registration: Registration, remote: string): void {
    let connection: Connection | undefined;
    const helloTimer = setTimeout(() => ws.close(CLOSE_CODES.helloTimeout, 'no hello'), HELLO_TIMEOUT_MS);
    ws.on('message', (data, isBinary) => {
      if (isBinary) return ws.close(CLOSE_CODES.badMessage, 'binary frames are not part of the protocol');
      const msg = parseWorkerMessage(data.toString());
      if ('error' in msg) {
        this.#send(ws, { type: 'error', code: 'bad_message', message: msg.error });
        return;
      }
      if (!connection) {
        if (msg.type !== 'hello')
          return this.#send(ws, { type: 'error', code: 'hello_first', message: 'send hello first' });
        clearTimeout(helloTimer);
        void this.#hello(ws, registration, remote, msg).then(
          (c) => {
            connection = c;
          },
          (err: unknown) => {
            this.#deps.log.warn({ err }, 'worker hello failed');
            ws.close(CLOSE_CODES.badMessage, 'hello failed');
          },
        );
        return;
      }
      this.#handle(connection, msg);
    });
    ws.on('close', () => {
      clearTimeout(helloTimer);
      if (connection) void this.#disconnected(connection);
    });
    ws.on('error', () => {});
  }

  #send(ws: WebSocket, msg: ServerMessage): void {
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(msg));
  }

  async #hello(
    ws: WebSocket,
    registration: Registration,
    remote: string,
    hello: HelloMessage,
  ): Promise<Connection | undefined> {
    const { teamId } = registration;
    if (hello.protocol !== WORKER_PROTOCOL_VERSION) {
      this.#send(ws, {
        type: 'error',
        code: 'protocol_mismatch',
        message: `this server speaks worker protocol ${WORKER_PROTOCOL_VERSION}, not ${hello.protocol}`,
      });
      ws.close(CLOSE_CODES.protocolMismatch, 'protocol mismatch');
      return undefined;
    }
    if (!WORKER_ID.test(hello.worker_id) || hello.worker_id === 'service' || hello.worker_id.startsWith('warp')) {
      this.#send(ws, {
        type: 'error',
        code: 'bad_worker_id',
        message: `worker id "${hello.worker_id}" is not allowed (1-63 of [A-Za-z0-9._-], not "service" or warp…)`,
      });
      ws.close(CLOSE_CODES.badMessage, 'bad worker id');
      return undefined;
    }
    if (registration.workerIds && !registration.workerIds.includes(hello.worker_id)) {
      this.#send(ws, {
        type: 'error',
        code: 'worker_id_not_allowed',
        message: `this worker token is for the worker ids ${registration.workerIds.join(', ')}, not "${hello.worker_id}"`,
      });
      ws.close(CLOSE_CODES.workerIdNotAllowed, 'worker id not allowed');
      return undefined;
    }
    const harnesses = (hello.harnesses ?? []).filter(isHarnessType) as HarnessType[];
    const def =
      hello.default_harness && isHarnessType(hello.default_harness) && harnesses.includes(hello.default_harness)
        ? hello.default_harness
        : undefined;
    const capacity = Math.max(1, Math.min(256, Math.floor(Number(hello.capacity) || 1)));
    const c: Connection = {
      id: newId('wrk'),
      ws,
      teamId,
      registration,
      workerId: hello.worker_id,
      host: String(hello.host ?? remote).slice(0, 200),
      capacity,
      harnesses,
      defaultHarness: def,
      assigned: new Map(),
      pausedUntil: 0,
      assignments: new CoalescedPass(
        () =>
          this.#assign(c).catch((err: unknown) =>
            this.#deps.log.warn({ err, workerId: c.workerId }, 'assigning runs to a worker failed'),
          ),
        () => !this.#stopped && c.ws.readyState === c.ws.OPEN,
      ),
    };
    await sql.insertWorkerConnection(this.#deps.db, {
      id: c.id,
      teamId,
      workerId: c.workerId,
      capacity,
      harnesses,
      defaultHarness: def ?? null,
      host: c.host,
      version: String(hello.version ?? '').slice(0, 100),
      protocol: hello.protocol,
      serverId: this.#deps.serverId,
      credentialKind: registration.credential.kind,
      credentialId: registration.credential.id,
    });
    // executions the worker still runs after a reconnect: this connection renews their leases from now on
    const running = (hello.running ?? []).filter((id) => typeof id === 'string');
    const adopted = running.length
      ? (
          await engine.adoptExecutions(this.#deps.db, {
            executionIds: running,
            teamId,
            workerId: c.workerId,
            executor: this.#executorName(c),
            leaseMs: this.#deps.leaseMs,
            trusted: registration.trusted,
            registrant: registration.registrant,
          })
        ).rows
      : [];
    for (const e of adopted) {
      c.assigned.set(e.id, {
        runId: e.run_id,
        harness: e.harness as HarnessType,
        followupIds: [],
        started: e.started,
        delivered: new Set(),
        cancelSent: false,
        chain: Promise.resolve(),
      });
    }
    const stale = running.filter((id) => !c.assigned.has(id));
    this.#connections.set(c.id, c);
    this.#send(ws, {
      type: 'welcome',
      protocol: WORKER_PROTOCOL_VERSION,
      connection_id: c.id,
      heartbeat_ms: this.#deps.heartbeatMs,
      lease_ms: this.#deps.leaseMs,
      stale,
    });
    this.#deps.log.info(
      { workerId: c.workerId, connectionId: c.id, capacity, harnesses },
      'self-hosted worker connected',
    );
    this.#dispatch(c);
    return c;
  }

  #executorName(c: Connection): string {
    return `worker:${c.workerId}/${c.id}`;
  }

  async #disconnected(c: Connection): Promise<void> {
    this.#connections.delete(c.id);
    await sql.markDisconnected(this.#deps.db, c.id).catch(() => {});
    this.#deps.log.info(
      { workerId: c.workerId, connectionId: c.id, running: c.assigned.size },
      'self-hosted worker disconnected',
    );
  }

  /** Assigns queued runs to a connection while it has free slots (one pass at a time per connection). */
  #dispatch(c: Connection): void {
    c.assignments.request();
  }

  async #assign(c: Connection): Promise<void> {
    const free = c.capacity - c.assigned.size;
    if (free <= 0 || Date.now() < c.pausedUntil || !this.#connections.has(c.id)) return;
    const { trusted, registrant } = c.registration;
    const claimed = await claimRuns(
      this.#deps.db,
      this.#deps.bus,
      { kind: 'worker', teamId: c.teamId, workerId: c.workerId, registration: { trusted, registrant } },
      {
        limit: free,
        harnesses: harnessChoice(c.harnesses, c.defaultHarness),
        executor: this.#executorName(c),
        leaseMs: this.#deps.leaseMs,
      },
    );
    // the runner's limits go with the assignment: the worker tightens its own with them
    const assignments = await claimedAssignments(
      this.#deps.db,
      this.#deps.secrets,
      claimed,
      this.#deps.sessionLink,
      this.#deps.factoryMcpUrl,
      false,
    );
    for (const [i, cl] of claimed.entries()) {
      const assignment = assignments[i]!;
      if (assignment instanceof Error) {
        await this.#deps.recorder.unassigned({ executionId: cl.executionId, runId: cl.run.id }, assignment);
        continue;
      }
      c.assigned.set(cl.executionId, {
        runId: cl.run.id,
        harness: cl.harness,
        followupIds: assignment.followups.map((f) => f.id),
        started: false,
        delivered: new Set(assignment.followups.map((f) => f.id)),
        cancelSent: false,
        chain: Promise.resolve(),
      });
      this.#send(c.ws, { type: 'assignment', execution_id: cl.executionId, plan: assignment });
    }
  }

  #handle(c: Connection, msg: WorkerMessage): void {
    if (msg.type === 'heartbeat') {
      void this.#heartbeat(c, msg.running ?? [], Number(msg.load) || 0).catch((err: unknown) =>
        this.#deps.log.warn({ err }, 'worker heartbeat failed'),
      );
      return;
    }
    if (msg.type === 'hello') return;
    const a = c.assigned.get(msg.execution_id);
    if (!a) {
      // not this connection's (ended by the reaper, or another worker's): tell it to stop
      if (msg.type !== 'completed' && msg.type !== 'failed' && msg.type !== 'rejected')
        this.#send(c.ws, { type: 'cancel', execution_id: msg.execution_id, reason: 'lost' });
      return;
    }
    const { recorder } = this.#deps;
    const executionId = msg.execution_id;
    const then = (fn: () => Promise<void>) => {
      a.chain = a.chain
        .then(fn)
        .catch((err: unknown) =>
          this.#deps.log.warn({ err, executionId, type: msg.type }, 'recording a worker message failed'),
        );
    };
    switch (msg.type) {
      case 'claimed':
        then(async () => {
          const ok = await recorder.started({
            executionId,
            runId: a.runId,
            workspace: String(msg.workspace ?? ''),
            leaseMs: this.#deps.leaseMs,
            followupIds: a.followupIds,
            where: `self-hosted worker "${c.workerId}" (${c.host}) with the ${a.harness} harness`,
          });
          if (ok) a.started = true;
          else this.#cancel(c, executionId, a, 'cancelled');
        });
        break;
      case 'rejected':
        c.assigned.delete(executionId);
        c.pausedUntil = Date.now() + this.#deps.pollMs;
        then(() =>
          recorder.release(
            executionId,
            a.runId,
            `Back in the queue: self-hosted worker "${c.workerId}" rejected it (${msg.reason})`,
          ),
        );
        break;
      case 'event': {
        // a worker reports what its agent did; state changes are the server's to record
        const events = msg.events.filter(
          (e) =>
            e &&
            typeof e === 'object' &&
            REPORTABLE.has(e.type) &&
            e.data &&
            typeof e.data === 'object' &&
            !Array.isArray(e.data),
        );
        then(() => recorder.events(a.runId, executionId, events));
        break;
      }
      case 'completed':
      case 'failed': {
        const outcome: ExecutionOutcome =
          msg.type === 'completed'
            ? { kind: 'succeeded', exitCode: msg.exit_code ?? null, message: String(msg.message ?? 'completed') }
            : {
                kind: msg.outcome === 'failed' || msg.outcome === 'cancelled' ? msg.outcome : 'error',
                exitCode: msg.exit_code ?? null,
                message: String(msg.reason ?? 'failed'),
                ...(msg.error_code ? { errorCode: String(msg.error_code) } : {}),
              };
        if (msg.agent_session_id) outcome.agentSessionId = String(msg.agent_session_id);
        a.endReported = true;
        then(async () => {
          await recorder.finished({ executionId, runId: a.runId, outcome, ...(msg.usage ? { usage: msg.usage } : {}) });
          c.assigned.delete(executionId);
          this.#dispatch(c);
        });
        break;
      }
    }
  }

  async #heartbeat(c: Connection, running: string[], load: number): Promise<void> {
    const ids = running.filter((id) => c.assigned.has(id));
    await sql.markSeen(this.#deps.db, c.id, load);
    const checks = await this.#deps.recorder.heartbeat(ids, this.#deps.leaseMs);
    for (const check of checks) {
      const a = c.assigned.get(check.executionId);
      if (a && check.verdict !== 'live') this.#cancel(c, check.executionId, a, check.verdict);
    }
    // assigned here but no longer running there (the worker restarted without it): the reaper ends it by lease
    this.#dispatch(c);
  }

  #cancel(c: Connection, executionId: string, a: Assigned, reason: 'cancelled' | 'lost'): void {
    if (a.cancelSent || a.endReported) return;
    a.cancelSent = true;
    this.#send(c.ws, { type: 'cancel', execution_id: executionId, reason });
  }

  /** A revoked API key or worker token: the connections it registered end now (the runs they hold go back by lease). */
  #onRevoked(data: { key_id?: string; worker_token_id?: string } | null): void {
    for (const c of this.#connections.values()) {
      const { kind, id } = c.registration.credential;
      if ((kind === 'key' && id === data?.key_id) || (kind === 'token' && id === data?.worker_token_id))
        c.ws.close(CLOSE_CODES.credentialRevoked, 'credential revoked');
    }
  }

  #find(runId: string): [Connection, string, Assigned] | undefined {
    for (const c of this.#connections.values()) {
      for (const [id, a] of c.assigned) if (a.runId === runId) return [c, id, a];
    }
    return undefined;
  }

  #onRunChanged(data: { run_id?: string; state?: string; followup_id?: string } | null): void {
    if (!data?.run_id) return;
    const found = this.#find(data.run_id);
    if (!found) return;
    const [c, executionId, a] = found;
    if (data.state === 'CANCELLED') this.#cancel(c, executionId, a, 'cancelled');
    if (data.followup_id) void this.#forwardFollowups([[c, executionId, a]]);
  }

  /** Follow-ups of runs running on workers whose harness takes them live. */
  async #forwardFollowups(targets: [Connection, string, Assigned][]): Promise<void> {
    const live = targets.filter(([, , a]) => a.started && adapterFor(a.harness)?.liveFollowups);
    if (live.length === 0) return;
    const res = await waitingFollowups(
      this.#deps.db,
      live.map(([, , a]) => a.runId),
    );
    for (const f of res.rows) {
      const target = live.find(([, , a]) => a.runId === f.run_id);
      if (!target || target[2].delivered.has(f.id)) continue;
      target[2].delivered.add(f.id);
      this.#send(target[0].ws, {
        type: 'followup',
        execution_id: target[1],
        followup: { id: f.id, message: f.message },
      });
    }
  }

  async #poll(): Promise<void> {
    const targets: [Connection, string, Assigned][] = [];
    for (const c of this.#connections.values()) {
      this.#dispatch(c);
      for (const [id, a] of c.assigned) targets.push([c, id, a]);
    }
    if (targets.length === 0) return;
    const checks = await this.#deps.recorder.check(targets.map(([, id]) => id));
    for (const check of checks) {
      const t = targets.find(([, id]) => id === check.executionId);
      if (!t || check.verdict === 'live') continue;
      this.#cancel(t[0], check.executionId, t[2], check.verdict);
      // given back to the queue by the reaper before the worker answered: the slot is free again
      if (!t[2].started && check.verdict === 'lost') t[0].assigned.delete(check.executionId);
    }
    await this.#forwardFollowups(targets);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const u of this.#unsubscribe) u();
    await this.#poller?.stop();
    for (const c of this.#connections.values()) c.ws.close(CLOSE_CODES.serverStopping, 'server stopping');
    await Promise.all([...this.#connections.values()].map((c) => this.#disconnected(c)));
    this.#wss.close();
  }
}
