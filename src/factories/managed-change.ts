/**
 * Writes to a managed factory's definition files through the reconciler (validate → commit → apply in one
 * step), shared by the webhook and automation management APIs. A repository-backed factory answers 409
 * `factory_read_only`; an invalid result answers 422 `definition_invalid` with the diagnostics.
 */
import type { Caller } from '../identity/principal.ts';
import type { FactoryFileInput } from '../definitions/load.ts';
import type { ServiceContext } from '../context.ts';
import type { Diagnostic } from '../definitions/diagnostic.ts';
import { AppError, isAppError } from '../kernel/errors.ts';
import { definitionInvalid, readOnlyError } from './apply/reconciler.ts';
import type { FactoryController } from './controller.ts';
import type { ApplyOutcome, FactoryRow } from './apply/model.ts';
import * as factorySql from './apply/sql.ts';
import type { LiveRoutes } from './live-state.ts';

/** What a write to a managed factory needs: the reconcile loops, and this process's ingress routes if it has them. */
export interface ManagedFactoryContext extends ServiceContext {
  controller: FactoryController;
  /** The ingress's routing snapshot, in processes with the `ingress` role. */
  routing: LiveRoutes | undefined;
}

/** The caller's factory, or 404. */
export async function teamFactory(ctx: ServiceContext, teamId: string, factoryId: string): Promise<FactoryRow> {
  const factory = await factorySql.getTeamFactory(ctx.db, teamId, factoryId);
  if (!factory) throw new AppError('resource_not_found', `factory ${factoryId} does not exist`);
  return factory;
}

/** Refuses a write to a factory whose files live elsewhere, naming where. */
export function requireManaged(ctx: ManagedFactoryContext, factory: FactoryRow): void {
  if (factory.source.type !== 'managed')
    throw readOnlyError(factory, ctx.controller.reconciler.sourceFor(factory).describe());
}

export function commitAuthor(request: Caller): { name: string; email: string } {
  const subject = request.principal.subject;
  return { name: subject.displayName, email: subject.email ?? `${subject.id}@agentyard.invalid` };
}

/**
 * Applies `mutate` to the factory's files as one commit. `mutate` runs serialised with every other change to
 * the factory, so checks made inside it see the files as they are. Answers once the change is live and this
 * process's ingress routes reflect it.
 */
export async function changeManagedFactory(
  ctx: ManagedFactoryContext,
  factory: FactoryRow,
  request: Caller,
  message: string,
  mutate: (files: FactoryFileInput[]) => FactoryFileInput[] | Promise<FactoryFileInput[]>,
): Promise<ApplyOutcome> {
  requireManaged(ctx, factory);
  const outcome = await ctx.controller.reconciler
    .applyManagedChange(factory.id, mutate, { author: commitAuthor(request), message })
    .catch((err: unknown) => {
      throw withDefinitionHint(factory, err);
    });
  if (outcome.result === 'failed') {
    if (outcome.errors.some((d) => d.severity === 'error')) throw definitionInvalid(outcome.errors);
    throw new AppError(
      'internal_error',
      outcome.message ?? `the change to factory ${factory.name} was committed but did not apply`,
    );
  }
  return outcome;
}

/**
 * A managed factory created with only a name has no files, and a webhook or an automation cannot be added to
 * it before its factory.yaml: the refusal says how to give it one.
 */
function withDefinitionHint(factory: FactoryRow, err: unknown): unknown {
  if (!isAppError(err) || err.code !== 'definition_invalid') return err;
  const diagnostics = (err.extensions.diagnostics ?? []) as Diagnostic[];
  if (!diagnostics.some((d) => d.code === 'FF_MISSING_FACTORY')) return err;
  return definitionInvalid(
    diagnostics,
    `factory ${factory.name} has no definition yet: apply its files first (POST /api/v1/factories/${factory.id}/apply)`,
  );
}

/** The Markdown/YAML file at `path`, or undefined. */
export function fileAt(files: readonly FactoryFileInput[], path: string): FactoryFileInput | undefined {
  return files.find((f) => f.path === path);
}

export function replaceFile(files: readonly FactoryFileInput[], path: string, content: string): FactoryFileInput[] {
  return [...files.filter((f) => f.path !== path), { path, content }];
}
