import type { ServiceContext } from '../context.ts';
import type { FactoryService } from '../factories/service.ts';
import type { FactoryController } from '../factories/controller.ts';
import type { SecretProvider } from '../secrets/provider.ts';

/** The server's services the operator's controllers use. */
export interface OperatorContext extends ServiceContext {
  controller: FactoryController;
  factories: FactoryService;
  secrets: SecretProvider;
}
