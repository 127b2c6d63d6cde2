import pino from 'pino';
import type { DestinationStream, LoggerOptions } from 'pino';
import pretty from 'pino-pretty';
import type { LogFormat } from './config.ts';
import type { Logger } from './kernel/log.ts';
import { redactUrl } from './kernel/redact.ts';

/** The readable form: `14:02:11 INFO: message` and the fields below it, colours on a terminal. */
export function prettyStream(destination: NodeJS.WritableStream = process.stdout): DestinationStream {
  return pretty({
    destination,
    sync: true,
    colorize: destination === process.stdout && Boolean(process.stdout.isTTY),
    translateTime: 'SYS:HH:MM:ss',
    // A request's line says its method, URL, status and time in the message; its fields are for JSON logs.
    ignore: 'pid,hostname,req,res,responseTime',
  });
}

export function createLogger(
  level: string,
  format: LogFormat = 'json',
  destination: NodeJS.WritableStream = process.stdout,
): Logger {
  const options: LoggerOptions = {
    level,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', '*.secret', '*.key', '*.value'],
      censor: '[redacted]',
    },
    serializers: {
      req: (req: { method: string; url: string; id: string }) => ({
        method: req.method,
        url: redactUrl(req.url),
        id: req.id,
      }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
  };
  const logger =
    format === 'pretty'
      ? pino(options, prettyStream(destination))
      : destination === process.stdout
        ? pino(options)
        : pino(options, destination);
  return logger as unknown as Logger;
}
