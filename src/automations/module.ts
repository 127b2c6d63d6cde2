import type { AppModule } from '../plugin.ts';
import type { ServiceContext } from '../context.ts';
import { OutboxEvaluator } from './evaluator.ts';
import { registerAutomationManagementRoutes, registerAutomationReadRoutes } from './routes.ts';
import type { EvaluatorOptions } from './evaluator.ts';

const evaluators = new WeakMap<ServiceContext, OutboxEvaluator>();

/** This server's outbox evaluator, when it runs one (tests wait on it). */
export function evaluatorOf(ctx: ServiceContext): OutboxEvaluator | undefined {
  return evaluators.get(ctx);
}

export function createAutomationsModule(options: EvaluatorOptions = {}): AppModule {
  return {
    name: 'automations',
    async api(app, ctx) {
      await registerAutomationReadRoutes(app, ctx);
      await registerAutomationManagementRoutes(app, ctx);
    },
    async start(ctx) {
      // The ingress nodes produce the outbox and a controller node backs them up; SKIP LOCKED shares the work.
      if (!ctx.config.roles.has('ingress') && !ctx.config.roles.has('controller')) return async () => {};
      const evaluator = new OutboxEvaluator(ctx.db, ctx.bus, ctx.log, options);
      evaluators.set(ctx, evaluator);
      evaluator.start();
      return () => evaluator.stop();
    },
  };
}

export const automationsModule = createAutomationsModule();
