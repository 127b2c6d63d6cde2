import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Config } from '../config.ts';
import type { Authenticator } from '../identity/service.ts';
import type { Principal } from '../identity/principal.ts';
import type { Db } from '../store/db.ts';
import type { Bus } from '../store/bus.ts';
import type { SecretCipher } from '../secrets/crypto.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set on every authenticated API route. */
    principal: Principal;
  }
  interface FastifyContextConfig {
    /** An API route that answers without an API key. */
    public?: boolean;
  }
}

/** What every module gets: the database, configuration, logger and the cross-process bus. */
export interface ServiceContext {
  db: Db;
  config: Config;
  log: FastifyBaseLogger;
  authenticator: Authenticator;
  bus: Bus;
  /** Encrypts secret values at rest with the instance master key. */
  cipher: SecretCipher;
}

export type AppInstance = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** A domain's contribution to the service: API routes, root routes and background work. */
export interface AppModule {
  name: string;
  /** Routes under `/api/v1`, behind API-key authentication unless a route sets `config.public`. */
  api?: (app: AppInstance, ctx: ServiceContext) => Promise<void>;
  /** Routes at the root of the server (webhook ingress, pages), with no API-key authentication. */
  root?: (app: AppInstance, ctx: ServiceContext) => Promise<void>;
  /** Background work started with the server (reconciler, outbox, executors); resolves to its stop function. */
  start?: (ctx: ServiceContext) => Promise<() => Promise<void>>;
}
