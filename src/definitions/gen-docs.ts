/**
 * Renders docs/factory-files.md from the schemas, the trigger catalogue, the diagnostic codes and the
 * hand-written decisions (decisions.md beside this file).
 *
 *   node src/definitions/gen-docs.ts --write   # rewrite docs/factory-files.md
 *   node src/definitions/gen-docs.ts           # print to stdout
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DIAGNOSTIC_CODES } from './codes.ts';
import { WEBHOOK_UID_FORMAT } from './ids.ts';
import { MAX_FILE_BYTES, RESOURCE_NAME } from './load.ts';
import { PAYLOAD_FILTER_LIMITS } from './payload-filter-grammar.ts';
import { SCHEMA_VERSION, getSchemaBundle } from './schemas.ts';
import type { JsonSchema } from './schemas.ts';
import { KNOWN_SIGNATURE_SCHEMES } from './signature-schemes.ts';
import {
  FILTER_KEY_ALIASES,
  IN_ONLY_FILTER_KEYS,
  INTEGER_FILTER_KEYS,
  TRIGGER_CATALOGUE,
  TRIGGER_PROVIDERS_RUN_HERE,
} from './triggers.ts';
import { MAX_WEBHOOKS_PER_FACTORY } from './validate.ts';

export const DOC_PATH = fileURLToPath(new URL('../../docs/factory-files.md', import.meta.url));

type Bundle = Record<string, JsonSchema>;

function resolveRef(bundle: Bundle, owner: string, ref: string): { schema: JsonSchema; owner: string } {
  const [doc, fragment = ''] = ref.split('#');
  const name = doc ? doc : owner;
  let node: unknown = bundle[name];
  for (const seg of fragment.split('/').filter(Boolean)) node = (node as Record<string, unknown>)[seg];
  return { schema: node as JsonSchema, owner: name };
}

/** Follows $ref chains, merging the referring schema's own description over the target's. */
function deref(bundle: Bundle, owner: string, schema: JsonSchema): { schema: JsonSchema; owner: string } {
  let current = { schema, owner };
  const description = schema.description;
  while (typeof current.schema.$ref === 'string') {
    const { $ref, ...rest } = current.schema;
    const target = resolveRef(bundle, current.owner, $ref);
    current = { schema: { ...target.schema, ...rest }, owner: target.owner };
  }
  return description ? { ...current, schema: { ...current.schema, description } } : current;
}

function typeName(bundle: Bundle, owner: string, raw: JsonSchema): string {
  const { schema, owner: o } = deref(bundle, owner, raw);
  if (Array.isArray(schema.enum)) {
    return schema.enum.map((v) => (v === null ? 'null' : `\`${String(v)}\``)).join(' \\| ');
  }
  const types = Array.isArray(schema.type) ? (schema.type as string[]) : schema.type ? [schema.type as string] : [];
  return types
    .map((t) => {
      if (t === 'array' && schema.items) return `list of ${typeName(bundle, o, schema.items as JsonSchema)}`;
      if (t === 'object' && schema.additionalProperties && typeof schema.additionalProperties === 'object') {
        return `map of name → ${typeName(bundle, o, schema.additionalProperties as JsonSchema)}`;
      }
      if (t === 'object') return 'mapping';
      return t;
    })
    .join(' or ');
}

function cell(text: unknown): string {
  return typeof text === 'string' ? text.replace(/\|/g, '\\|').replace(/\n/g, ' ') : '';
}

interface Row {
  key: string;
  type: string;
  required: boolean;
  description: string;
}

function rows(bundle: Bundle, owner: string, raw: JsonSchema, prefix: string, out: Row[], depth = 0): void {
  const { schema, owner: o } = deref(bundle, owner, raw);
  const props = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required as string[] | undefined) ?? []);
  for (const [key, child] of Object.entries(props)) {
    const path = prefix ? `${prefix}.${key}` : key;
    const resolved = deref(bundle, o, child);
    const notRun = resolved.schema['x-agentyard-not-run-here'];
    const description = [
      cell(resolved.schema.description),
      notRun ? `*Accepted, not run here (warning \`FF_NOT_SUPPORTED_HERE\`).*` : '',
      resolved.schema['x-agentyard-extension'] ? '*Agentyard extension.*' : '',
    ]
      .filter(Boolean)
      .join(' ');
    out.push({ key: path, type: typeName(bundle, o, child), required: required.has(key), description });
    if (depth < 4 && resolved.schema.properties) rows(bundle, resolved.owner, resolved.schema, path, out, depth + 1);
    const items = resolved.schema.items as JsonSchema | undefined;
    if (depth < 4 && items) {
      const item = deref(bundle, resolved.owner, items);
      if (item.schema.properties) rows(bundle, item.owner, item.schema, `${path}[]`, out, depth + 1);
    }
  }
}

function keyTable(bundle: Bundle, name: string): string {
  const out: Row[] = [];
  rows(bundle, name, bundle[name]!, '', out);
  const lines = ['| Key | Type | Required | Description |', '|---|---|---|---|'];
  for (const r of out) lines.push(`| \`${r.key}\` | ${r.type} | ${r.required ? 'yes' : ''} | ${r.description} |`);
  return lines.join('\n');
}

const FILE_KINDS: [string, string, string][] = [
  ['factory.schema.json', '`factory.yaml`', 'YAML'],
  ['agent.schema.json', '`agents/<name>/agent.md`', 'Markdown: frontmatter + body (the agent prompt)'],
  [
    'automation.schema.json',
    '`automations/<name>/automation.md` (legacy flat `automations/<name>.md`)',
    'Markdown: frontmatter + body (the run prompt)',
  ],
  ['runner.schema.json', '`runners/<name>.yaml`', 'YAML'],
  ['scorer.schema.json', '`scorers/<name>/scorer.md`', 'Markdown: frontmatter + body (the rubric)'],
  ['webhook.schema.json', '`webhooks/<name>.yaml`', 'YAML'],
  ['benchmark-suite.schema.json', '`benchmarks/<suite>/suite.yaml`', 'YAML'],
  ['benchmark-task.schema.json', '`benchmarks/<suite>/tasks/<task>.yaml`', 'YAML'],
];

function triggerTable(): string {
  const lines = ['| Provider | Event | Filter keys | Evaluated here |', '|---|---|---|---|'];
  for (const [provider, events] of Object.entries(TRIGGER_CATALOGUE)) {
    const byKeys = new Map<string, string[]>();
    for (const [event, keys] of Object.entries(events)) {
      const k = keys.join(', ');
      byKeys.set(k, [...(byKeys.get(k) ?? []), event]);
    }
    for (const [keys, names] of byKeys) {
      const shown = keys
        .split(', ')
        .map(
          (k) =>
            `\`${k}\`${IN_ONLY_FILTER_KEYS.has(k) ? ' (`in` only)' : ''}${INTEGER_FILTER_KEYS.has(k) ? ' (integers)' : ''}`,
        )
        .join(', ');
      lines.push(
        `| \`${provider}\` | ${names.map((n) => `\`${n}\``).join(', ')} | ${shown} | ${TRIGGER_PROVIDERS_RUN_HERE.has(provider) ? 'yes' : 'no (warning)'} |`,
      );
    }
  }
  return lines.join('\n');
}

function aliasTable(): string {
  const lines = ['| Provider | Alias | Canonical key | Kind |', '|---|---|---|---|'];
  for (const [provider, aliases] of Object.entries(FILTER_KEY_ALIASES)) {
    for (const [alias, { canonical, nameAlias }] of Object.entries(aliases)) {
      lines.push(
        `| \`${provider}\` | \`${alias}\` | \`${canonical}\` | ${nameAlias ? 'names resolved to IDs at apply (plain list, no `in`/`not_in`)' : 'spelling alias'} |`,
      );
    }
  }
  return lines.join('\n');
}

export function renderDocs(): string {
  const bundle = getSchemaBundle();
  const decisions = readFileSync(new URL('./decisions.md', import.meta.url), 'utf8').trim();
  const parts: string[] = [];
  parts.push(`<!-- Generated by \`node src/definitions/gen-docs.ts --write\` from src/definitions/ (schemas, triggers.ts, codes.ts, decisions.md). Do not edit by hand: a test fails when this file is stale. -->

# Factory definition files (schema \`${SCHEMA_VERSION}\`)

A factory is a directory tree in a Git repository (or on disk). \`agentyard validate DIR\` checks it offline;
an apply runs the same checks plus those that need live state (secret names, team runners, webhook UIDs).
Every problem is reported as \`file:line:column: severity code: message\`.

The JSON Schemas below are published by the server at \`GET /api/v1/factory-files/schemas/${SCHEMA_VERSION}/{document}\`
(\`common.schema.json\`, ${FILE_KINDS.map(([n]) => `\`${n}\``).join(', ')}); YAML language servers can use them directly.

## Tree layout

| Path | Kind | Name from |
|---|---|---|
| \`factory.yaml\` | factory settings (exactly one) | — |
| \`agents/<name>/agent.md\` | agent (at least one; exactly one foreman) | directory |
| \`agents/<name>/skills/**/SKILL.md\` | skill visible to that agent only (not parsed) | directory holding SKILL.md |
| \`automations/<name>/automation.md\`, \`automations/<name>.md\` | automation (both forms for one name: \`FF_DUPLICATE_PATH\`) | directory / file stem |
| \`runners/<name>.yaml\` | runner | file stem |
| \`scorers/<name>/scorer.md\` | scorer | directory |
| \`skills/**/SKILL.md\` | skill visible to every agent (not parsed) | directory holding SKILL.md |
| \`webhooks/<name>.yaml\` | inbound webhook (at most ${MAX_WEBHOOKS_PER_FACTORY}) | file stem |
| \`benchmarks/<suite>/suite.yaml\`, \`benchmarks/<suite>/tasks/<task>.yaml\` | benchmark suite and tasks | directories / file stem |

Resource names match \`${RESOURCE_NAME.source}\`. Files larger than ${MAX_FILE_BYTES / 1024} KiB are refused.
Hidden entries (\`.git\`, \`.github\`…), \`README\`/\`CHANGELOG\`/\`LICENSE\`/\`CONTRIBUTING\` files and other files
in resource directories are ignored; resource-like files at other paths are \`FF_UNSUPPORTED_PATH\`.

YAML: one document per file, YAML 1.2 core schema; anchors, aliases, explicit tags, merge keys (\`<<\`),
duplicate keys and non-scalar keys are refused. Markdown resources open and close a \`---\` frontmatter fence.`);

  for (const [name, where, format] of FILE_KINDS) {
    const schema = bundle[name]!;
    parts.push(
      `## ${where}\n\n${cell(schema.description)} Format: ${format}. Schema: \`${name}\`.\n\n${keyTable(bundle, name)}`,
    );
  }

  parts.push(`## Triggers

A trigger is \`{provider, event, filter?, schedule?}\`. Filter keys are \`snake_case\`; every key must match
(AND), an omitted key matches anything; a value is a list (any of) or \`{in: [...], not_in: [...]}\`, and a
value may not be in both. \`schedule\` is valid only on \`schedule\`/\`cron_fired\`, which needs exactly one of an
inline \`schedule\` or a non-empty \`filter.schedule_ids\`.

${triggerTable()}

GitHub, Slack and Linear events start runs only when the person who caused them is one the factory's
\`triggerPolicy\` allows: by default GitHub authors whose \`author_association\` is OWNER, MEMBER or
COLLABORATOR, and the connected Slack or Linear workspace's own people, no bots (docs/governance.md). An
automation past a daily cap of its factory, its agent or itself (\`budget.dailyRuns\`, \`budget.dailyCostUsd\`)
starts no run either: its firing is recorded as skipped, with the cap, in the delivery log.

Authoring aliases of filter keys (an alias and its canonical key together are an error):

${aliasTable()}

### Webhook triggers

\`filter.webhook_ids\` holds exactly one webhook: its file's name (\`[ci]\` for \`webhooks/ci.yaml\`) or its UID
(${WEBHOOK_UID_FORMAT}); one trigger per webhook. A name must be a \`webhooks/\` file of the same tree (checked
offline) and is resolved to that webhook's UID at apply, so a tree can name a webhook in the commit that
creates it and works unchanged on another factory; the live automation stores the UID. Offline validation
checks a UID's format; an apply checks that the UID belongs to the factory. \`filter.payload\` is an
optional payload filter:

- The filter is a mapping; every key must match (AND); a nested mapping reaches nested fields.
- A bare scalar matches by strict equality (\`1\` is not \`"1"\`); a bare list is \`in\`.
- An operator mapping holds only \`in\` (list), \`not_in\` (list) and \`exists\` (boolean); any other key beside
  them is an error naming its path.
- A key written \`"/name"\` is always the field \`name\` (\`~1\` = \`/\`, \`~0\` = \`~\`): the way to a field named like an
  operator. A bare key that looks like another language's operator (\`gt\`, \`ne\`, \`regex\`, \`$in\`, …) is a
  field name and applies with a warning (docs/payload-filters.md).
- A missing field matches only \`exists: false\` and \`not_in\`. A payload array matches \`in\`/equality when any
  element matches, and \`not_in\` when no element is in the list.
- Limits: depth ≤ ${PAYLOAD_FILTER_LIMITS.maxDepth}, ≤ ${PAYLOAD_FILTER_LIMITS.maxKeys} keys in all (operator keys included), ≤ ${PAYLOAD_FILTER_LIMITS.maxListValues} values per list, ≤ ${PAYLOAD_FILTER_LIMITS.maxSerializedBytes} bytes as JSON. Empty lists and empty mappings are refused.

### Schedules

\`schedule.cron\`: 5 fields (minute hour day-of-month month day-of-week; names \`JAN\`–\`DEC\`, \`SUN\`–\`SAT\`;
\`*\`, ranges, lists, steps, \`?\` in the day fields) or \`@yearly\`, \`@annually\`, \`@monthly\`, \`@weekly\`,
\`@daily\`, \`@midnight\`, \`@hourly\`, \`@every <duration>\` (Go durations: \`90s\`, \`15m\`, \`1h30m\`). Always UTC:
\`TZ=\`/\`CRON_TZ=\` prefixes, a seconds field, \`L\`, \`W\` and \`#\` are refused. \`schedule.name\` identifies the
schedule within its automation: names are unique, and at most one schedule is unnamed.

### Concurrency keys

\`concurrency\` on an automation (an Agentyard extension) limits how many of its runs are active at once per
key, the key rendered from the event when the automation fires; \`maxActiveRuns\` in \`factory.yaml\` caps all
active runs of the factory (docs/governance.md, "Concurrency keys"):

\`\`\`yaml
# automations/review/automation.md: only the newest review of a pull request runs
concurrency:
  key: "{{repository}}#{{pull_request.number}}"
  limit: 1              # default 1
  onNew: cancelRunning  # queue (default) | cancelRunning | skip
\`\`\`

In a key, \`{{payload.<path>}}\` is a field of the delivery's body (a number indexes a list); for GitHub, Slack
and Linear events \`{{repository}}\` (GitHub, lower-case \`owner/name\`), \`{{event}}\` (the trigger event),
\`{{subject}}\` and \`{{sender}}\` are the event's, and any other \`{{<path>}}\` is \`{{payload.<path>}}\`; a schedule's
fire has only \`{{schedule}}\`, the schedule's name. A field
that is missing, null, a list or a mapping renders as nothing, so such firings share the key the rest of the
template makes. A placeholder that is not a field path, or a \`{{\` never closed, is \`FF_INVALID_VALUE\` at the key.

## Signature schemes

\`signatureScheme\` of a \`signature\` webhook: ${KNOWN_SIGNATURE_SCHEMES.map((s) => `\`${s}\``).join(', ')}.
\`deliveryIdHeader\` must be a valid header name and not a credential or signature header
(\`Authorization\`, \`Cookie\`, \`X-Hub-Signature-256\`, …).

## Diagnostic codes

| Code | Meaning |
|---|---|
${Object.entries(DIAGNOSTIC_CODES)
  .map(([code, meaning]) => `| \`${code}\` | ${cell(meaning)} |`)
  .join('\n')}

\`agentyard validate\` exits 0 when there is no error (warnings allowed), 1 when there is one, 2 on a usage or
I/O problem. \`--format text|json|github\` (\`--json\` = \`--format json\`).`);

  parts.push(decisions);
  return `${parts.join('\n\n')}\n`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = renderDocs();
  if (process.argv.includes('--write')) writeFileSync(DOC_PATH, text);
  else process.stdout.write(text);
}
