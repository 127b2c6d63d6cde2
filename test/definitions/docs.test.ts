import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DOC_PATH, renderDocs } from '../../src/definitions/gen-docs.ts';
import { getSchemaBundle } from '../../src/definitions/index.ts';

describe('docs/factory-files.md', () => {
  it('is up to date with the schemas (run `node src/definitions/gen-docs.ts --write`)', () => {
    expect(readFileSync(DOC_PATH, 'utf8')).toBe(renderDocs());
  });
});

describe('getSchemaBundle', () => {
  it('serves every document under its file name, as draft 2020-12 with $ids', () => {
    const bundle = getSchemaBundle();
    expect(Object.keys(bundle).sort()).toEqual(
      [
        'agent.schema.json',
        'automation.schema.json',
        'benchmark-suite.schema.json',
        'benchmark-task.schema.json',
        'common.schema.json',
        'factory.schema.json',
        'runner.schema.json',
        'scorer.schema.json',
        'webhook.schema.json',
      ].sort(),
    );
    for (const [name, schema] of Object.entries(bundle)) {
      expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
      expect(schema.$id).toBe(name);
    }
    const webhook = bundle['webhook.schema.json']!.properties as Record<string, { enum?: string[] }>;
    expect(webhook.signatureScheme!.enum).toContain('standard_webhooks');
  });

  it('returns copies that callers cannot use to change validation', () => {
    const bundle = getSchemaBundle();
    (bundle['factory.schema.json']!.required as string[]).length = 0;
    expect(getSchemaBundle()['factory.schema.json']!.required).toEqual(['name', 'repositories', 'agentDefaults']);
  });
});
