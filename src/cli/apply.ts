import { parseCommandLine } from './args.ts';
import { formatText } from '../definitions/diagnostic.ts';
import type { Diagnostic } from '../definitions/diagnostic.ts';
import type { Change, PlanWarning } from '../factories/apply/model.ts';
import {
  CliError,
  SERVER_OPTIONS,
  describeProblem,
  factoryTree,
  formatChanges,
  formatWarnings,
  reportCliError,
  summary,
  usageShown,
} from './plan.ts';

const USAGE = `Usage: agentyard apply DIR --factory NAME [--message TEXT] [--server URL] [--key KEY] [--json]

Replaces the files of the managed factory NAME with the tree in DIR: the server validates it, commits it
to the factory's repository and applies it in one step, or refuses it and changes nothing. Factories
backed by a Git repository or a directory are changed through their files instead.
Exit status: 0 applied (or unchanged), 1 refused, 2 usage or connection problem.`;

interface Outcome {
  result: string;
  revision: string | null;
  message: string | null;
  changes: Change[];
  warnings: PlanWarning[];
  errors: Diagnostic[];
}

export async function applyCommand(argv: string[]): Promise<number> {
  try {
    const { values, positionals } = parseCommandLine({
      args: argv,
      allowPositionals: true,
      options: { ...SERVER_OPTIONS, message: { type: 'string', short: 'm' } },
    });
    if (values.help) return usageShown(USAGE);
    const { client, id, files } = await factoryTree(positionals, values, USAGE);
    const res = await client.call<Outcome>('POST', `/factories/${id}/apply`, {
      files,
      ...(values.message ? { message: values.message } : {}),
    });
    if (values.json) process.stdout.write(`${JSON.stringify(res.body, null, 2)}\n`);
    if (res.status === 422 && res.body.code === 'definition_invalid') {
      if (!values.json) process.stdout.write(formatText(res.body.diagnostics ?? []));
      process.stderr.write(`agentyard apply: ${values.factory}: refused; nothing was committed or changed\n`);
      return 1;
    }
    if (res.status !== 200)
      throw new CliError(
        `apply ${values.factory}: ${describeProblem(res.status, res.body)}`,
        res.status === 409 ? 1 : 2,
      );
    const outcome = res.body;
    if (values.json) return outcome.result === 'failed' ? 1 : 0;
    if (outcome.result === 'failed') {
      process.stdout.write(formatText(outcome.errors));
      process.stderr.write(`agentyard apply: ${outcome.message ?? 'failed'}\n`);
      return 1;
    }
    process.stdout.write(
      `${outcome.message ?? outcome.result}${outcome.result === 'unchanged' ? ' (no changes)' : ''}\n`,
    );
    if (outcome.changes.length) process.stdout.write(formatChanges(outcome.changes));
    if (outcome.warnings.length) process.stdout.write(`\n${formatWarnings(outcome.warnings)}`);
    process.stdout.write(
      `\n${summary(outcome.changes).replace(/to (create|change|delete)/g, (_, verb: string) => `${verb === 'change' ? 'changed' : `${verb}d`}`)}.\n`,
    );
    return 0;
  } catch (err) {
    return reportCliError('apply', err);
  }
}
