/** Which integrations a factory has: an omitted `integrations` keeps the set the last applied revision had. */
import type { FactoryDefinition } from '../../definitions/model.ts';

export function withKeptIntegrations(
  definition: FactoryDefinition,
  applied: FactoryDefinition | null,
): FactoryDefinition {
  if (definition.factory.integrations !== undefined) return definition;
  const kept = applied?.factory?.integrations;
  if (kept === undefined) return definition;
  return { ...definition, factory: { ...definition.factory, integrations: kept } };
}
