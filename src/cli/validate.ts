import { parseCommandLine } from './args.ts';
import { closest } from '../definitions/levenshtein.ts';
import { formatDiagnostics } from '../definitions/diagnostic.ts';
import type { DiagnosticFormat } from '../definitions/diagnostic.ts';
import { readFactoryDir } from '../definitions/load.ts';
import { validateFactory } from '../definitions/validate.ts';
import { builtinModelIds, parseCatalogueMode } from '../config.ts';
import { knownModels } from '../runs/models.ts';
import type { KnownModels } from '../runs/models.ts';

const USAGE = `Usage: agentyard validate DIR [--format text|json|github] [--json]

Checks a factory tree offline: every file against its schema, and the cross-file rules an apply checks.
Prints one line per problem (file:line:column: severity code: message). Checks that need live state
(secret names, webhook UIDs) run only at apply. A runner must be a runners/ file (a server has no team runners).
Exit status: 0 no errors (warnings allowed), 1 errors, 2 usage or I/O problem.`;

const FORMATS: readonly DiagnosticFormat[] = ['text', 'json', 'github'];

/** `agentyard validate DIR`: exit 0 when the tree has no error, 1 otherwise. */
export async function validateCommand(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseCommandLine({
      args: argv,
      allowPositionals: true,
      options: {
        format: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    process.stderr.write(
      `agentyard validate: ${error instanceof Error ? error.message : String(error)} (agentyard validate --help)\n`,
    );
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const format = (values.json ? 'json' : (values.format ?? 'text')) as DiagnosticFormat;
  if (!FORMATS.includes(format)) {
    const meant = closest(format, FORMATS);
    process.stderr.write(
      `agentyard validate: unknown format "${format}"${meant ? `; did you mean "${meant}"?` : ''} (text, json or github)\n`,
    );
    return 2;
  }
  if (positionals.length !== 1) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const dir = positionals[0]!;
  let files;
  try {
    files = await readFactoryDir(dir);
  } catch (error) {
    process.stderr.write(
      `agentyard validate: cannot read ${dir}: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    return 2;
  }
  let models: KnownModels;
  try {
    models = knownModels({
      agentModels: process.env.AGENTYARD_MODELS,
      builtinModels: builtinModelIds(process.env),
      modelCatalogue: parseCatalogueMode(process.env.AGENTYARD_MODEL_CATALOGUE),
    });
  } catch (error) {
    process.stderr.write(`agentyard validate: ${error instanceof Error ? error.message : String(error)}\n`);
    return 2;
  }
  // The model catalogue as a server with the same AGENTYARD_MODELS / AGENTYARD_MODEL_CATALOGUE has it. What a
  // deployment does with settings it ignores is the server's to say (its validate endpoint and apply).
  // A server has no team runners (docs/reconciler.md), so a runner no runners/ file defines is an error here too.
  const result = await validateFactory(files, { models, teamRunnerExists: () => false });
  if (format === 'json') {
    const body = {
      valid: result.valid,
      schema_version: result.schemaVersion,
      diagnostics: result.diagnostics,
      state_dependent_checks_not_run: result.stateDependentChecksNotRun,
      deferred_resolutions: result.deferredResolutions,
    };
    process.stdout.write(`${JSON.stringify(body, null, 2)}\n`);
  } else {
    process.stdout.write(formatDiagnostics(result.diagnostics, format));
    if (format === 'text') {
      const errors = result.diagnostics.filter((d) => d.severity === 'error').length;
      const warnings = result.diagnostics.length - errors;
      const deferred = result.stateDependentChecksNotRun.length;
      const summary = `${files.length} files: ${errors} error${errors === 1 ? '' : 's'}, ${warnings} warning${warnings === 1 ? '' : 's'}`;
      const note = deferred
        ? `; ${deferred} state-dependent check${deferred === 1 ? '' : 's'} (secrets, webhook UIDs) run at apply`
        : '';
      process.stderr.write(`${summary}${note}\n`);
    }
  }
  return result.valid ? 0 : 1;
}
