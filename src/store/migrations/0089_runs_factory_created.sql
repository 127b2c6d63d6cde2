-- The daily caps (docs/governance.md, "Daily caps") count a factory's runs of the UTC day at each creation of a
-- run of a factory that has caps: its runs by creation time.
CREATE INDEX runs_factory_created ON runs (factory_id, created_at) WHERE factory_id IS NOT NULL;
