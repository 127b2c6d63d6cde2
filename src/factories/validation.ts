/**
 * The dry-run validation of factory files as the validate endpoint and the factory interface's
 * `validate_factory_files` answer it (reference factory-definition.md §9).
 */
import type { Diagnostic } from '../definitions/diagnostic.ts';
import type { DefinitionPool, PoolContext } from '../definitions/pool.ts';
import { SCHEMA_VERSION } from '../definitions/schemas.ts';
import type { RequestProblem } from '../definitions/validate-request.ts';
import { AppError } from '../kernel/errors.ts';

function diagnosticView(d: Diagnostic) {
  return {
    code: d.code,
    path: d.file,
    line: d.line,
    column: d.column,
    message: d.message,
    severity: d.severity,
    json_pointer: d.path,
  };
}

/** A refused request body as the API answers it; a refused file is also an `FF_LIMIT_EXCEEDED` diagnostic. */
function requestError(problem: RequestProblem): AppError {
  if (problem.path === undefined) return new AppError(problem.code, problem.detail);
  const diagnostic = {
    code: 'FF_LIMIT_EXCEEDED',
    path: problem.path,
    line: 1,
    column: 1,
    message: problem.detail,
    severity: 'error',
    json_pointer: '',
  };
  return new AppError(problem.code, problem.detail, { extensions: { diagnostics: [diagnostic] } });
}

/**
 * Validates a request body (`{files: [{path, content}]}` as JSON bytes) on the definition pool. `teamChecked`:
 * the context carries the team's secrets, so the checks that need them ran too.
 */
export async function validateFactoryFiles(
  definitions: DefinitionPool,
  body: Buffer,
  context: PoolContext & { teamChecked: boolean },
) {
  const { teamChecked, ...poolContext } = context;
  const outcome = await definitions.validateRequest(body, poolContext);
  if ('problem' in outcome) throw requestError(outcome.problem);
  const result = outcome.result;
  return {
    valid: result.valid,
    schema_version: result.schemaVersion,
    diagnostics: result.diagnostics.map(diagnosticView),
    deferred_resolutions: result.deferredResolutions.map((d) => ({
      path: d.file,
      field: d.field,
      kind: d.kind,
      json_pointer: d.path,
    })),
    state_dependent_checks_not_run: result.stateDependentChecksNotRun.map((c) => ({
      check: c.check,
      path: c.file,
      json_pointer: c.path,
      subject: c.subject,
    })),
    validation_scope: {
      parser: `agentyard/${SCHEMA_VERSION}`,
      state_independent: 'checked' as const,
      state_dependent: teamChecked ? ('partially_checked' as const) : ('not_checked' as const),
    },
  };
}
