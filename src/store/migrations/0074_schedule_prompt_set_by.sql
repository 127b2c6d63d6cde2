-- Who last set an API schedule's prompt (or agent configuration): RunCreatorInfo {type, uid, display_name,
-- email?}, the creator of the runs it starts. A schedule changed by someone other than its creator starts runs
-- as that person, never as the creator. Existing schedules take their last writer.
ALTER TABLE schedules ADD COLUMN prompt_set_by jsonb;
UPDATE schedules SET prompt_set_by = coalesce(updated_by, created_by) WHERE origin = 'api';
