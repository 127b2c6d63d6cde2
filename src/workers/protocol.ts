/**
 * The self-hosted worker protocol (docs/worker-protocol.md): JSON text frames over a WebSocket the worker
 * opens to `/api/v1/workers/connect` with `Authorization: Bearer <worker token or team admin key>`.
 */
import type { AgentEvent, Assignment, AssignmentFollowup } from '../execution/assignment.ts';

export const WORKER_PROTOCOL_VERSION = 1;
export const WORKER_CONNECT_PATH = '/api/v1/workers/connect';

/** WebSocket close codes the server uses (4000-4999 are the application's). */
export const CLOSE_CODES = {
  protocolMismatch: 4400,
  badMessage: 4401,
  workerIdNotAllowed: 4403,
  helloTimeout: 4408,
  credentialRevoked: 4410,
  serverStopping: 1001,
} as const;

// ---- worker → server

export interface HelloMessage {
  type: 'hello';
  protocol: number;
  worker_id: string;
  capacity: number;
  harnesses: string[];
  /** What runs with harness `oz` (or none) get on this worker. */
  default_harness: string | null;
  version: string;
  host: string;
  /** Executions still running here after a reconnect, or ended while disconnected (their end follows). */
  running: string[];
}

export interface ClaimedMessage {
  type: 'claimed';
  execution_id: string;
  workspace: string;
}

export interface RejectedMessage {
  type: 'rejected';
  execution_id: string;
  reason: 'at_capacity' | 'harness_unavailable' | 'shutting_down';
  message?: string;
}

export interface HeartbeatMessage {
  type: 'heartbeat';
  load: number;
  running: string[];
}

export interface EventMessage {
  type: 'event';
  execution_id: string;
  events: AgentEvent[];
}

export interface CompletedMessage {
  type: 'completed';
  execution_id: string;
  exit_code: number | null;
  message: string;
  agent_session_id?: string;
  usage?: Record<string, number>;
}

export interface FailedMessage {
  type: 'failed';
  execution_id: string;
  /** failed: the agent or its task failed (FAILED); error: the platform failed (ERROR); cancelled: stopped on request. */
  outcome: 'failed' | 'error' | 'cancelled';
  reason: string;
  error_code?: string;
  exit_code: number | null;
  agent_session_id?: string;
  usage?: Record<string, number>;
}

export type WorkerMessage =
  | HelloMessage
  | ClaimedMessage
  | RejectedMessage
  | HeartbeatMessage
  | EventMessage
  | CompletedMessage
  | FailedMessage;

// ---- server → worker

export interface WelcomeMessage {
  type: 'welcome';
  protocol: number;
  connection_id: string;
  heartbeat_ms: number;
  lease_ms: number;
  /** Of the `running` executions in hello, those the server no longer counts on (stop them). */
  stale: string[];
}

export interface AssignmentMessage {
  type: 'assignment';
  execution_id: string;
  /** The assignment; `plan` is its name on the wire, kept so that existing workers understand it. */
  plan: Assignment;
}

export interface CancelMessage {
  type: 'cancel';
  execution_id: string;
  reason: 'cancelled' | 'lost';
}

export interface FollowupMessage {
  type: 'followup';
  execution_id: string;
  followup: AssignmentFollowup;
}

export interface ErrorMessage {
  type: 'error';
  code: string;
  message: string;
}

export type ServerMessage = WelcomeMessage | AssignmentMessage | CancelMessage | FollowupMessage | ErrorMessage;

const WORKER_TYPES = new Set(['hello', 'claimed', 'rejected', 'heartbeat', 'event', 'completed', 'failed']);

/** A frame from a worker, or a reason it is not one. */
export function parseWorkerMessage(raw: string): WorkerMessage | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { error: 'not JSON' };
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return { error: 'not a JSON object' };
  const type = (value as { type?: unknown }).type;
  if (typeof type !== 'string' || !WORKER_TYPES.has(type))
    return { error: `unknown message type ${JSON.stringify(type)}` };
  const m = value as Record<string, unknown>;
  if (type !== 'hello' && type !== 'heartbeat' && typeof m.execution_id !== 'string')
    return { error: `${type}: execution_id must be a string` };
  if (type === 'hello' && (typeof m.worker_id !== 'string' || typeof m.protocol !== 'number'))
    return { error: 'hello: worker_id and protocol are required' };
  if (type === 'event' && !Array.isArray(m.events)) return { error: 'event: events must be an array' };
  return value as WorkerMessage;
}

/** Worker IDs: what `workerHost` may name (case-sensitive; `service` and `warp*` are the service's own). */
export const WORKER_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
