import type { ServiceContext } from '../context.ts';
import type { FactoryFileInput } from '../definitions/load.ts';
import { definitionPoolFor } from '../definitions/pool.ts';
import { delegatingSecretProvider } from '../secrets/provider.ts';
import { sourceUrlPolicyFor } from '../sources/url-policy.ts';
import type { CommitAuthor } from '../sources/managed.ts';
import { FactoryController } from './controller.ts';
import type { ApplyOutcome } from './model.ts';

export { FactoryController } from './controller.ts';
export { Reconciler, FactoryGoneError, definitionInvalid, readOnlyError } from './reconciler.ts';
export type { ReconcilerDeps, ReconcileOptions, Prepared } from './reconciler.ts';
export type * from './model.ts';
export { runConfigFor } from './run-config.ts';

const controllers = new WeakMap<ServiceContext, FactoryController>();

/** The one factory controller (reconciler plus loops) of a server. */
export function controllerFor(ctx: ServiceContext): FactoryController {
  let controller = controllers.get(ctx);
  if (!controller) {
    controller = new FactoryController({
      db: ctx.db,
      bus: ctx.bus,
      cipher: ctx.cipher,
      secrets: delegatingSecretProvider(ctx),
      log: ctx.log,
      dataDir: ctx.config.dataDir,
      definitions: definitionPoolFor(ctx.config),
      urlPolicy: sourceUrlPolicyFor(ctx.config),
      sourceLimits: ctx.config.sourceLimits,
    });
    controllers.set(ctx, controller);
  }
  return controller;
}

/**
 * Changes a managed factory in one step (validate → commit → apply), for the API that edits webhooks and
 * automations of managed factories. `mutate` gets the current files and returns the new ones. Throws
 * `factory_read_only` (409) for a repository- or directory-backed factory and `definition_invalid` (422,
 * `diagnostics` in the problem document) when the result is invalid; nothing is committed then.
 */
export function applyManagedChange(
  ctx: ServiceContext,
  factoryId: string,
  mutate: (files: FactoryFileInput[]) => FactoryFileInput[] | Promise<FactoryFileInput[]>,
  commit: { author: CommitAuthor; message: string },
): Promise<ApplyOutcome> {
  return controllerFor(ctx).reconciler.applyManagedChange(factoryId, mutate, commit);
}
