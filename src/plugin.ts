/**
 * What a domain's routes receive: the Fastify instance (with TypeBox schemas), the members the API adds to
 * requests, and the shape of the route plugins the composition root builds. Only route plugins and `src/http/` import this.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Role } from './config.ts';
import type { RequestPrincipal } from './kernel/caller.ts';

/** Answers a request straight from node:http (src/http/direct-routes.ts). */
export type DirectHandler = (request: IncomingMessage, response: ServerResponse) => void;

/** A route pattern answered by a direct handler, as the route table lists it. */
export interface DirectRoute {
  methods: readonly string[];
  /** Fastify-style pattern (`/webhooks/w/:uid`), for the route table only: the handler does its own matching. */
  url: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set on every authenticated API route. */
    principal: RequestPrincipal;
  }
  interface FastifyContextConfig {
    /** An API route that answers without an API key. */
    public?: boolean;
  }
  interface FastifyInstance {
    /**
     * Serves every request under `prefix` (ending in `/`) from `handler`, straight from node:http, and lists
     * `routes` in the route table as public root routes. Requests made with `app.inject()` do not reach it.
     */
    addDirectRoute(prefix: string, routes: readonly DirectRoute[], handler: DirectHandler): void;
  }
}

export type AppInstance = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/**
 * A domain's routes as the composition root hands them to the server: each part is registered as one Fastify
 * plugin (its own encapsulation context), with the services it needs already bound.
 */
export interface RoutePlugin {
  name: string;
  /** The process roles that serve its routes (AGENTYARD_ROLES); every process when absent. */
  roles?: readonly Role[];
  /** Routes under `/api/v1`, behind API-key authentication unless a route sets `config.public`. */
  api?: (app: AppInstance) => Promise<void>;
  /** Routes at the root of the server (webhook ingress, pages, health), with no API-key authentication. */
  root?: (app: AppInstance) => Promise<void>;
}
