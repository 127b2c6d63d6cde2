import type { AppModule } from './plugin.ts';
import { automationsModule } from './automations/module.ts';
import { identityModule } from './identity/module.ts';
import { ingressModule } from './ingress/module.ts';
import { createRunsModule } from './runs/module.ts';
import { createSchedulesModule } from './schedules/module.ts';
import { authorizeRunSecrets } from './factories/secret-grants.ts';
import { secretsModule } from './secrets/module.ts';
import { webhooksModule } from './webhooks/module.ts';
import { factoriesModule, factoryFilesModule } from './factories/module.ts';
import { healthModule } from './health/module.ts';
import { errorDocsModule } from './http/error-docs.ts';
import { executionModule } from './execution/module.ts';
import { consoleModule } from './console/module.ts';

/** Every domain of the service, in the order their routes and background work start. Add one line per module. */
export const MODULES: readonly AppModule[] = [
  identityModule,
  createRunsModule({ checkSecrets: authorizeRunSecrets }),
  secretsModule,
  factoriesModule,
  factoryFilesModule,
  ingressModule,
  automationsModule,
  webhooksModule,
  createSchedulesModule({ checkSecrets: authorizeRunSecrets }),
  healthModule,
  errorDocsModule,
  executionModule,
  consoleModule,
];
