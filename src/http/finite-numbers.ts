import type { ErrorObject, ValidateFunction } from 'ajv';

/**
 * Ajv coerces query strings such as `1e400` and `Infinity` to `Infinity` and then skips `minimum`/`maximum`
 * (its range checks apply to finite numbers only), and it lets integers past 2^53 through where a schema has
 * no maximum. Text only becomes a number by coercion, so any non-finite or unsafe number in coerced input
 * came from the client: it is refused like any other invalid field, naming it.
 */
function unsafeNumber(value: unknown, pointer: string): ErrorObject | undefined {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return numberError(pointer, 'must be a finite number');
    if (Math.abs(value) > Number.MAX_SAFE_INTEGER)
      return numberError(pointer, `must be between -${Number.MAX_SAFE_INTEGER} and ${Number.MAX_SAFE_INTEGER}`);
    return undefined;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = unsafeNumber(value[i], `${pointer}/${i}`);
      if (found) return found;
    }
    return undefined;
  }
  if (value !== null && typeof value === 'object') {
    for (const [key, member] of Object.entries(value)) {
      const found = unsafeNumber(member, `${pointer}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`);
      if (found) return found;
    }
  }
  return undefined;
}

function numberError(instancePath: string, message: string): ErrorObject {
  return { instancePath, schemaPath: '#/type', keyword: 'type', params: {}, message };
}

/** `validate`, then the finiteness check above on what it coerced; errors in Ajv's shape for Fastify. */
export function refuseUnsafeNumbers(validate: ValidateFunction): ValidateFunction {
  const checked = ((data: unknown) => {
    if (!validate(data)) {
      checked.errors = validate.errors;
      return false;
    }
    const found = unsafeNumber(data, '');
    checked.errors = found ? [found] : null;
    return found === undefined;
  }) as ValidateFunction;
  checked.schema = validate.schema;
  checked.schemaEnv = validate.schemaEnv;
  return checked;
}
