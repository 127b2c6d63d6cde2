-- Schedules: the scheduled agents of the /agent/schedules API and the inline schedules of automation files,
-- the log of their fires (one row per fired slot), and the schedule a scheduled run was fired by.

CREATE TABLE schedules (
  id text PRIMARY KEY,
  team_id text NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
  -- api: created through /agent/schedules. automation: an inline `schedule` of an automation file, kept in
  -- step with the applied definition and read-only through the API.
  origin text NOT NULL CHECK (origin IN ('api', 'automation')),
  name text NOT NULL,
  cron_schedule text NOT NULL,
  enabled boolean NOT NULL DEFAULT true,
  -- API schedules only: what each run is told and configured with (automation runs take the automation's).
  prompt text NOT NULL DEFAULT '',
  agent_config jsonb NOT NULL DEFAULT '{}'::jsonb,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- Automation schedules: identity is (factory, automation name, schedule name); '' = the unnamed schedule.
  factory_id text REFERENCES factories(id) ON DELETE CASCADE,
  automation_name text,
  automation_id text,
  trigger_name text,
  -- The next slot to fire; NULL while paused (or while the automation is disabled).
  next_run_at timestamptz,
  last_ran_at timestamptz,
  last_spawn_error text,
  -- RunCreatorInfo {type, uid, display_name, email?} of the API caller; NULL for automation schedules.
  created_by jsonb,
  updated_by jsonb,
  created_at timestamptz NOT NULL DEFAULT ay_now(),
  updated_at timestamptz NOT NULL DEFAULT ay_now()
);
CREATE INDEX schedules_team_name ON schedules (team_id, name, id);
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE enabled AND next_run_at IS NOT NULL;
CREATE UNIQUE INDEX schedules_automation_identity ON schedules (factory_id, automation_name, trigger_name) WHERE origin = 'automation';

-- One row per fired slot: the primary key makes a second fire of the same slot impossible, whichever
-- process attempts it.
CREATE TABLE schedule_fires (
  schedule_id text NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
  scheduled_for timestamptz NOT NULL,
  fired_at timestamptz NOT NULL,
  run_ids text[] NOT NULL DEFAULT '{}',
  error text,
  -- The process that fired it (diagnostics).
  fired_by text NOT NULL,
  PRIMARY KEY (schedule_id, scheduled_for)
);
CREATE INDEX schedule_fires_fired_at ON schedule_fires (fired_at);

-- {schedule_id, schedule_name, cron_schedule} of the schedule that fired a run, as it was at the fire.
ALTER TABLE runs ADD COLUMN schedule_info jsonb;
