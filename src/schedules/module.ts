import type { AppModule } from '../plugin.ts';
import { systemClock } from '../kernel/clock.ts';
import type { Clock } from '../kernel/clock.ts';
import { registerScheduleRoutes } from './routes.ts';
import { adminsOnlySecrets } from '../runs/secret-names.ts';
import type { RunSecretsCheck } from '../runs/secret-names.ts';
import { Scheduler } from './scheduler.ts';
import { ScheduleService } from './service.ts';
import { AutomationScheduleSync } from './sync-runner.ts';

export interface SchedulesModuleOptions {
  /** The time the scheduler and the API compute fires with (tests pass a ManualClock). */
  clock?: Clock;
  /** Called with the scheduler once it runs (tests). */
  onScheduler?: (scheduler: Scheduler) => void;
  /** Which secrets a caller may name in a schedule's agent_config (src/modules.ts passes the factories' grants). */
  checkSecrets?: RunSecretsCheck;
}

/** `/agent/schedules`, and in processes with the `scheduler` role the loop that fires schedules. */
export function createSchedulesModule(options: SchedulesModuleOptions = {}): AppModule {
  const clock = options.clock ?? systemClock;
  return {
    name: 'schedules',
    async api(app, ctx) {
      await registerScheduleRoutes(
        app,
        new ScheduleService(ctx.db, ctx.bus, clock),
        options.checkSecrets ?? adminsOnlySecrets,
        ctx.db,
      );
    },
    async start(ctx) {
      if (!ctx.config.roles.has('scheduler')) return async () => {};
      const sync = new AutomationScheduleSync({ db: ctx.db, bus: ctx.bus, clock, log: ctx.log });
      await sync.start();
      const scheduler = new Scheduler({ db: ctx.db, bus: ctx.bus, clock, log: ctx.log });
      scheduler.start();
      options.onScheduler?.(scheduler);
      return async () => {
        await sync.stop();
        await scheduler.stop();
      };
    },
  };
}
