import { describe, expect, it } from 'vitest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { factoryCrd, factoryJsonSchema, toStructural } from '../../src/operator/crd.ts';
import { staleCrdFiles } from '../../src/operator/gen-crds.ts';
import { DiagnosticSchema } from '../../src/factories/schemas.ts';

describe('Factory CRD', () => {
  it('crds/ and the chart hold what the generator writes (run node src/operator/gen-crds.ts --write)', async () => {
    expect(await staleCrdFiles()).toEqual([]);
  });

  it('status errors use the API Diagnostic definition', () => {
    const crd = factoryCrd() as any;
    const errors = crd.spec.versions[0].schema.openAPIV3Schema.properties.status.properties.errors.items;
    expect(Object.keys(errors.properties).sort()).toEqual(Object.keys((DiagnosticSchema as any).properties).sort());
    expect(errors.properties.severity).toEqual({ enum: ['error', 'warning'], type: 'string' });
  });

  it('the JSON Schema compiles and accepts a minimal Factory', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    const validate = ajv.compile(factoryJsonSchema());
    expect(validate({ spec: { source: { git: { url: 'file:///srv/repo.git' } } } })).toBe(true);
    expect(validate({ spec: { source: { git: { url: 'x', pollInterval: 'soon' } } } })).toBe(false);
    expect(validate({ spec: { source: { git: { url: 'x' } }, executor: 'docker' } })).toBe(false);
  });

  it('refuses what a structural schema cannot hold', () => {
    expect(() => toStructural({ type: 'object', properties: { a: { oneOf: [{ type: 'string' }] } } })).toThrow(/oneOf/);
    expect(() => toStructural({ type: 'object', properties: { a: { description: 'no type' } } })).toThrow(
      /needs a type/,
    );
    expect(toStructural({ type: ['string', 'null'] })).toEqual({ type: 'string', nullable: true });
  });
});
