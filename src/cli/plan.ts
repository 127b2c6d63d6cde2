import { isParseArgsError, parseCommandLine } from './args.ts';
import { formatText } from '../definitions/diagnostic.ts';
import type { Diagnostic } from '../definitions/diagnostic.ts';
import { readFactoryDir } from '../definitions/load.ts';
import type { FactoryFileInput } from '../definitions/load.ts';
import { formatChanges, summary } from '../factories/plan-text.ts';
import type { Change, PlanWarning } from '../factories/apply/model.ts';

export { formatChanges, summary };

/** Options shared by the commands that talk to a running server. */
export const SERVER_OPTIONS = {
  factory: { type: 'string' },
  server: { type: 'string' },
  key: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 2) {
    super(message);
    this.exitCode = exitCode;
  }
}

interface Problem {
  code?: string;
  detail?: string;
  title?: string;
  diagnostics?: Diagnostic[];
}

/** A small client of the Agentyard API for the CLI: base URL and key from flags or AGENTYARD_URL / AGENTYARD_API_KEY. */
export class ServerClient {
  readonly base: string;
  readonly #key: string;

  constructor(server: string | undefined, key: string | undefined) {
    const url = (server ?? process.env.AGENTYARD_URL ?? 'http://localhost:8080').replace(/\/+$/, '');
    this.base = url.endsWith('/api/v1') ? url : `${url}/api/v1`;
    const apiKey = key ?? process.env.AGENTYARD_API_KEY;
    if (!apiKey) throw new CliError('an API key is needed: pass --key or set AGENTYARD_API_KEY');
    this.#key = apiKey;
  }

  async call<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T & Problem }> {
    let res: Response;
    try {
      res = await fetch(`${this.base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.#key}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    } catch (err) {
      throw new CliError(
        `cannot reach ${this.base}: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`,
      );
    }
    const text = await res.text();
    let parsed: unknown = {};
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      throw new CliError(`${method} ${path}: the server answered ${res.status} with a body that is not JSON`);
    }
    return { status: res.status, body: parsed as T & Problem };
  }

  /** The factory's ID: NAME is a factory name of the key's team (or already an ID). */
  async factoryId(name: string): Promise<string> {
    if (/^fac_[0-9a-z]{26}$/.test(name)) return name;
    let cursor: string | undefined;
    do {
      const page = await this.call<{ factories: { id: string; name: string }[]; page_info: { next_cursor?: string } }>(
        'GET',
        `/factories?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      if (page.status !== 200) throw new CliError(`list factories: ${describeProblem(page.status, page.body)}`);
      const found = page.body.factories.find((f) => f.name === name);
      if (found) return found.id;
      cursor = page.body.page_info.next_cursor;
    } while (cursor);
    // Naming a factory that does not exist is a usage problem (exit 2), like a missing argument.
    throw new CliError(`no factory named "${name}" in this key's team`);
  }
}

export function describeProblem(status: number, body: Problem): string {
  return `${status} ${body.code ?? ''}${body.detail ? `: ${body.detail}` : body.title ? `: ${body.title}` : ''}`.trim();
}

export async function readTree(dir: string): Promise<FactoryFileInput[]> {
  try {
    return (await readFactoryDir(dir)).filter((f) => !f.symlink);
  } catch (err) {
    throw new CliError(`cannot read ${dir}: ${(err as Error).message}`);
  }
}

/** One `file:line:1: warning code: message` line per plan warning; identical lines once. */
export function formatWarnings(warnings: readonly PlanWarning[]): string {
  return [...new Set(warnings.map((w) => `${w.file}:${w.line}:1: warning ${w.code}: ${w.message}\n`))].join('');
}

const USAGE = `Usage: agentyard plan DIR --factory NAME [--server URL] [--key KEY] [--json]

Shows what applying the factory tree in DIR to the factory NAME would create, change and delete, with
the checks that need the server (managed secrets, webhook UIDs, renames). Applies nothing.
The server and key come from --server/--key or AGENTYARD_URL/AGENTYARD_API_KEY.
Exit status: 0 the tree would apply, 1 it would be refused, 2 usage or connection problem.`;

interface PlanResponse {
  valid: boolean;
  diagnostics: Diagnostic[];
  changes: Change[];
  warnings: PlanWarning[];
  applied_revision: string | null;
}

/** `DIR --factory NAME`: the factory's id on the server and the tree read from DIR. */
export async function factoryTree(
  positionals: readonly string[],
  values: { factory?: string | undefined; server?: string | undefined; key?: string | undefined },
  usage: string,
): Promise<{ client: ServerClient; id: string; files: FactoryFileInput[]; factory: string }> {
  if (positionals.length !== 1 || !values.factory) throw new CliError(usage);
  const client = new ServerClient(values.server, values.key);
  const files = await readTree(positionals[0]!);
  return { client, id: await client.factoryId(values.factory), files, factory: values.factory };
}

export async function planCommand(argv: string[]): Promise<number> {
  try {
    const { values, positionals } = parseCommandLine({ args: argv, allowPositionals: true, options: SERVER_OPTIONS });
    if (values.help) return usageShown(USAGE);
    const { client, id, files } = await factoryTree(positionals, values, USAGE);
    const res = await client.call<PlanResponse>('POST', `/factories/${id}/plan`, { files });
    if (res.status !== 200) throw new CliError(`plan ${values.factory}: ${describeProblem(res.status, res.body)}`);
    const plan = res.body;
    if (values.json) {
      process.stdout.write(`${JSON.stringify(plan, null, 2)}\n`);
      return plan.valid ? 0 : 1;
    }
    if (!plan.valid) {
      process.stdout.write(formatText(plan.diagnostics));
      const errors = plan.diagnostics.filter((d) => d.severity === 'error').length;
      process.stderr.write(
        `${values.factory}: the tree would be refused (${errors} error${errors === 1 ? '' : 's'}); nothing would change\n`,
      );
      return 1;
    }
    process.stdout.write(
      `Plan for factory ${values.factory} (applied revision: ${plan.applied_revision ?? 'none'}):\n`,
    );
    process.stdout.write(plan.changes.length ? formatChanges(plan.changes) : '  no changes\n');
    const notes = plan.diagnostics.filter((d) => d.severity !== 'error');
    if (plan.warnings.length || notes.length)
      process.stdout.write(`\n${formatWarnings(plan.warnings)}${formatText(notes)}`);
    process.stdout.write(`\n${summary(plan.changes)}.\n`);
    return 0;
  } catch (err) {
    return reportCliError('plan', err);
  }
}

/** Prints the usage (for --help); exit status 0. */
export function usageShown(usage: string): number {
  process.stdout.write(`${usage}\n`);
  return 0;
}

export function reportCliError(command: string, err: unknown): number {
  if (err instanceof CliError) {
    process.stderr.write(`${err.message.startsWith('Usage:') ? '' : `agentyard ${command}: `}${err.message}\n`);
    return err.exitCode;
  }
  if (isParseArgsError(err)) {
    process.stderr.write(`agentyard ${command}: ${err.message} (agentyard ${command} --help)\n`);
    return 2;
  }
  throw err;
}
