import type { BaseLogger, Bindings, ChildLoggerOptions } from 'pino';

/** The logger every service takes: pino's, as Fastify's own request loggers also are. */
export interface Logger
  extends Pick<BaseLogger, 'level' | 'info' | 'error' | 'debug' | 'fatal' | 'warn' | 'trace' | 'silent'> {
  child(bindings: Bindings, options?: ChildLoggerOptions): Logger;
}
