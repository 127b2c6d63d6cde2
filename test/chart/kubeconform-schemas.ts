/**
 * kubeconform's JSON schemas for the kinds a test validates, generated from a real API server's /openapi/v2
 * (the Factory CRD included once it is installed). `k8s-test-env.sh schemas` converts all ≈ 620 definitions,
 * ≈ 29 s of CPU; this converts only the named kinds and the definitions they refer to, with the same converter
 * and flags (≈ 2 s).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { KubernetesTestEnv } from '../operator/k8s.ts';

const run = promisify(execFile);

interface OpenApiV2 {
  definitions: Record<string, { 'x-kubernetes-group-version-kind'?: { kind: string }[] }>;
  paths: Record<string, unknown>;
}

/** The definitions of `kinds` and every definition they reach through `$ref`. */
function definitionsFor(openapi: OpenApiV2, kinds: ReadonlySet<string>): OpenApiV2['definitions'] {
  const all = openapi.definitions;
  const keep = new Set(
    Object.keys(all).filter((name) =>
      (all[name]!['x-kubernetes-group-version-kind'] ?? []).some((gvk) => kinds.has(gvk.kind)),
    ),
  );
  const pending = [...keep];
  while (pending.length > 0) {
    const name = pending.pop()!;
    for (const [, ref] of JSON.stringify(all[name]).matchAll(/"\$ref":"#\/definitions\/([^"]+)"/g)) {
      if (ref !== undefined && !keep.has(ref) && all[ref] !== undefined) {
        keep.add(ref);
        pending.push(ref);
      }
    }
  }
  return Object.fromEntries([...keep].map((name) => [name, all[name]!]));
}

/**
 * Writes the schemas of `kinds` into a fresh directory and answers it with the `-schema-location` for kubeconform.
 * The converter is the one `k8s-test-env.sh schemas` installs; on a machine without it, that command runs once
 * to install it.
 */
export async function kubeconformSchemas(
  k8s: KubernetesTestEnv,
  kinds: ReadonlySet<string>,
): Promise<{ dir: string; location: string }> {
  const converter = path.join(k8s.cacheDir, 'venv', 'bin', 'openapi2jsonschema');
  if (!existsSync(converter)) {
    await run('bash', [k8s.script, 'schemas', k8s.cacheDir], {
      env: { ...process.env, K8S_TEST_RUN_DIR: k8s.runDir },
      maxBuffer: 16 << 20,
    });
  }
  const openapi = JSON.parse(await k8s.kubectl(['get', '--raw', '/openapi/v2'])) as OpenApiV2;
  const definitions = definitionsFor(openapi, kinds);
  const dir = mkdtempSync(path.join(tmpdir(), 'agentyard-schemas-'));
  writeFileSync(path.join(dir, 'openapi-v2.json'), JSON.stringify({ ...openapi, paths: {}, definitions }));
  // the converter joins its working directory with -o to resolve $ref, so -o must be relative
  const { stdout } = await run(
    converter,
    ['-o', 'schemas', '--expanded', '--kubernetes', '--stand-alone', '--strict', `file://${dir}/openapi-v2.json`],
    { cwd: dir, maxBuffer: 16 << 20 },
  );
  // as k8s-test-env.sh: the CustomResourceDefinition kind itself is expected to be "not currently supported"
  const errors = stdout
    .split('\n')
    .filter((line) => /error occured/.test(line) && !/customresource|jsonschemaprops/i.test(line));
  if (errors.length > 0) throw new Error(`openapi2jsonschema: ${errors.join('; ')}`);
  return { dir, location: path.join(dir, 'schemas', '{{ .ResourceKind }}{{ .KindSuffix }}.json') };
}
