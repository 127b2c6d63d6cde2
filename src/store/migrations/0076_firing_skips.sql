-- An automation whose trigger matched a provider event but whose factory's trigger policy let no run start
-- (docs/governance.md, "Who may trigger"): the firing row records why, and no run.
ALTER TABLE automation_firings ADD COLUMN skipped text;
