/**
 * Every diagnostic code the validator emits, declared once. The `FF_*` codes follow the product's
 * factory-file format; codes marked `agentyard` exist only here. docs/factory-files.md is generated
 * from this table.
 */
export const DIAGNOSTIC_CODES = {
  FF_MISSING_FACTORY: 'No `factory.yaml` at the root of the tree.',
  FF_UNSUPPORTED_VERSION: '`schemaVersion` is not `v1alpha1`.',
  FF_UNSUPPORTED_PATH:
    'A resource-like file at a non-canonical path, a `.yml` file where `.yaml` is expected, a symbolic link, or a resource name outside the allowed characters.',
  FF_DUPLICATE_PATH: 'The same resource is declared twice (an automation in both the flat and the directory form).',
  FF_INVALID_DOCUMENT: 'A file is empty, holds several YAML documents, or its root is not a mapping.',
  FF_MALFORMED_FRONTMATTER: 'A Markdown resource does not open and close a `---` frontmatter fence.',
  FF_INVALID_YAML: 'The YAML cannot be parsed, or uses merge keys (`<<`) or non-scalar keys.',
  FF_DUPLICATE_KEY: 'A mapping repeats a key; two agents are the foreman; a list repeats a value that must be unique.',
  FF_ANCHOR: 'YAML anchors (`&name`) are not permitted.',
  FF_ALIAS: 'YAML aliases (`*name`) are not permitted.',
  FF_TAG: 'Explicit YAML tags (`!!str`, `!custom`) are not permitted.',
  FF_UNKNOWN_FIELD: 'A key the schema does not define (the message suggests the closest known key).',
  FF_MISSING_REQUIRED: 'A required key is absent, or a required list is empty.',
  FF_TYPE_MISMATCH: 'A value has the wrong YAML type.',
  FF_INVALID_VALUE: 'A value violates a format, range or exclusivity rule.',
  FF_INVALID_REFERENCE:
    'A name does not resolve: an agent, runner, secret, webhook file name or webhook UID; or an unknown `agentType`/`credentialStrategy`.',
  FF_INVALID_MCP: 'An `mcpServers` entry is not exactly `{warpId: <non-empty string>}`.',
  FF_INVALID_TRIGGER: 'A trigger is structurally wrong (schedule rules, webhook trigger shape).',
  FF_INVALID_EVENT: 'The trigger provider or event is unknown.',
  FF_INVALID_FILTER:
    'A filter key is not valid for the provider and event, or a filter value is outside its domain (payload filter grammar and limits included); a warning for a payload filter key that looks like an operator (`gt`, `ne`, …).',
  FF_LIMIT_EXCEEDED:
    'agentyard: a limit is exceeded: more than 20 webhooks, a file larger than 256 KiB, YAML nesting deeper than 100 levels, a file or tree over its work budget (mapping keys, values, aliases; counted before parsing), a validation over its time or memory budget, or a source tree over the source limits.',
  FF_NOT_SUPPORTED_HERE:
    'agentyard (warning): a valid key or file for a feature this service does not run: integrations other than Slack and Linear, cloud providers, triggers of providers other than webhook, schedule, GitHub, Slack and Linear (GitLab, Jira, factory), and settings the deployment accepts without acting on.',
} as const;

export type DiagnosticCode = keyof typeof DIAGNOSTIC_CODES;
