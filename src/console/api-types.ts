/** The parts of the JSON API's answers that the console shows (docs/openapi.json has the whole shapes). */

export interface Diagnostic {
  file: string;
  line: number;
  column: number;
  path: string;
  code: string;
  message: string;
  severity: 'error' | 'warning';
}

export interface FactoryStatus {
  state: string;
  ready: boolean;
  stalled: boolean;
  reason: string | null;
  message: string | null;
  applied_revision: string | null;
  attempted_revision: string | null;
  applied_at: string | null;
  attempted_at: string | null;
  errors: Diagnostic[];
  source_error: { kind?: string; message?: string } | null;
}

export interface Factory {
  id: string;
  name: string;
  read_only: boolean;
  source: { type: string; url?: string; branch?: string; path?: string | null };
  status: FactoryStatus;
  counts?: { webhooks: number; automations: number; schedules: number };
}

export interface PageInfo {
  has_next_page: boolean;
  next_cursor?: string;
}

export interface Change {
  kind: string;
  name: string;
  file: string;
  action: 'created' | 'updated' | 'deleted';
}

export interface Apply {
  id: string;
  revision: string;
  result: 'applied' | 'unchanged' | 'failed';
  message: string | null;
  trigger: string | null;
  commit: { sha: string | null; author: string | null; message: string | null; time: string | null };
  errors: Diagnostic[];
  changes: Change[];
  finished_at: string;
}

export interface Webhook {
  uid: string;
  name: string;
  file: string;
  auth_mode: 'token' | 'url_token' | 'signature';
  signature_scheme: string | null;
  secret_name: string | null;
  enabled: boolean;
  ingress_url: string;
  state?: string;
  factory_id?: string;
}

export interface Delivery {
  delivery_id: string;
  label: string;
  status: string;
  size: number;
  received_at: string;
  reason?: string;
}

export interface Artifact {
  artifact_type: string;
  created_at?: string;
  data?: Record<string, unknown>;
}

export interface Run {
  run_id: string;
  title: string;
  state: string;
  prompt: string;
  source: string;
  /** The stored source when it is finer than the served one (`WEBHOOK`, `FACTORY`). */
  source_detail?: string;
  created_at: string;
  updated_at: string;
  started_at?: string | null;
  /** ISO 8601 duration of the run's executions. */
  run_time?: string;
  creator?: { display_name?: string; uid?: string } | null;
  executor?: { display_name?: string; uid?: string } | null;
  status_message?: { message?: string; error_code?: string } | null;
  agent_config?: unknown;
  artifacts?: Artifact[] | null;
  session_link?: string;
  request_usage?: Record<string, number>;
  factory_uid?: string;
  automation_id?: string;
  delivery_id?: string;
  parent_run_id?: string;
  conversation_id?: string;
  worker_host?: string;
  schedule?: { schedule_id: string; schedule_name: string; cron_schedule: string };
  agent_skill?: { name?: string; full_path?: string };
  /** The run's concurrency key (docs/governance.md, "Concurrency keys"). */
  concurrency?: { key: string; limit: number; superseded_by?: string };
}

/** One event of a run, as the API's event stream carries it. */
export interface RunEventDoc {
  sequence: number;
  run_id: string;
  execution_id: string | null;
  type: string;
  occurred_at: string;
  data: Record<string, unknown>;
}

export interface Schedule {
  id: string;
  name: string;
  cron_schedule: string;
  enabled: boolean;
  prompt: string;
  last_spawn_error: string | null;
  history: { last_ran: string | null; next_run: string | null };
  factory_uid?: string;
  automation_name?: string;
  agent_config?: Record<string, unknown> | null;
  metadata?: Record<string, string> | null;
}

export interface WhoAmI {
  team: { id: string; name?: string };
  principal: { display_name: string };
  role: 'admin' | 'member';
  instance_admin: boolean;
}

export interface Automation {
  id: string;
  name: string;
  file: string;
  enabled: boolean;
  firing: boolean;
  not_firing_reasons?: string[];
  prompt: string;
  agent: string | null;
}

export interface CreatedWebhook extends Webhook {
  secret?: string;
  ingress_url_with_token?: string;
}

export interface DefinitionFile {
  path: string;
  content: string;
}

export interface Connection {
  id: string;
  provider: string;
  mode?: string;
  events_url: string;
  last_event_at: string | null;
  last_event: string | null;
  last_error_at: string | null;
  last_error: string | null;
  installations?: { installation_id: string; account_login: string | null; last_seen_at: string }[];
}
