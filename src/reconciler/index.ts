export { FactoryController } from './controller.ts';
export { Reconciler, FactoryGoneError, definitionInvalid, readOnlyError } from './reconciler.ts';
export type { ReconcilerDeps, ReconcileOptions, Prepared } from './reconciler.ts';
export type * from './model.ts';
export { runConfigFor } from './run-config.ts';
