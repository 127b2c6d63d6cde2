import { parseArgs } from 'node:util';
import type { ParseArgsConfig } from 'node:util';
import { closest } from '../definitions/levenshtein.ts';

/** Whether `err` is one of node:util parseArgs' usage errors (an unknown option, a missing value, ...). */
export function isParseArgsError(err: unknown): err is TypeError & { code: string } {
  return err instanceof TypeError && String((err as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS');
}

/**
 * `parseArgs` whose usage errors are one clean line: Node's own message for an unknown option runs on about
 * `--` and positionals; this one names the option and, for a plausible typo, the option meant.
 */
export function parseCommandLine<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (err) {
    if (!isParseArgsError(err)) throw err;
    throw Object.assign(new TypeError(cleanMessage(err, config)), { code: err.code });
  }
}

function cleanMessage(err: TypeError & { code: string }, config: ParseArgsConfig): string {
  if (err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const option = /Unknown option '([^']+)'/.exec(err.message)?.[1] ?? '';
    const known = Object.keys(config.options ?? {});
    const match = closest(option.replace(/^-+/, '').replace(/=.*$/, ''), known);
    return `unknown option ${option}${match ? `; did you mean --${match}?` : ''}`;
  }
  if (err.code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
    const value = /Unexpected argument '([^']*)'/.exec(err.message)?.[1];
    return value === undefined ? 'takes no arguments' : `unexpected argument "${value}"`;
  }
  const missing = /^Option '(-[^ ']+)[^']*' argument missing/.exec(err.message);
  if (missing) return `option ${missing[1]} needs a value`;
  return err.message.split('. ')[0] ?? err.message;
}
