import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ConsoleApi } from './api.ts';
import type { Viewer } from './layout.ts';
import type { LookupCache } from './lookup-cache.ts';
import type { ConsoleSession } from './session.ts';

/** A signed-in request: its session, the API with its key, and who it is for the page header. */
export interface Signed {
  session: ConsoleSession;
  api: ConsoleApi;
  viewer: Viewer;
}

export type Form = Record<string, string>;

export type PageRequest<P> = FastifyRequest<{ Params: P; Querystring: Record<string, string> }>;
export type Handler<P> = (request: PageRequest<P>, reply: FastifyReply) => Promise<unknown>;

/** One stored event of a run, as the runs domain reads it. */
export interface StoredEvent {
  sequence: number;
  execution_id: string | null;
  type: string;
  occurred_at: Date;
  data: Record<string, unknown>;
}

/**
 * A run's events by the download token `GET /agent/runs/{id}/transcript` made for the signed-in key (the token
 * names the key's team and the run): the rows the download would serialise, undefined when the token names
 * nothing.
 */
export type TranscriptReader = (token: string) => Promise<readonly StoredEvent[] | undefined>;

/** What a group of console routes needs from the console: the page and form wrappers, set up once. */
export interface ConsoleKit {
  /** The whole application, for its API in process and its listening address. */
  root: FastifyInstance;
  lookups: LookupCache;
  transcript: TranscriptReader;
  csp: string;
  sendPage(reply: FastifyReply, body: string, status?: number): FastifyReply;
  /** A page for signed-in people; anyone else goes to the sign-in form; API problems become problem pages. */
  viewing<P>(render: (s: Signed, request: PageRequest<P>, reply: FastifyReply) => Promise<unknown>): Handler<P>;
  /** A form post: signed in, the session's CSRF token, then the change. */
  changing<P>(
    act: (s: Signed, form: Form, request: PageRequest<P>, reply: FastifyReply) => Promise<unknown>,
  ): Handler<P>;
}
