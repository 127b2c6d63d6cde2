-- Linear deliveries that mention users by profile link (markdown carries names, not ids) look the names up
-- through the same durable job queue as GitHub's outbound work (src/integrations/linear-mentions.ts).
ALTER TABLE github_jobs DROP CONSTRAINT github_jobs_kind_check;
ALTER TABLE github_jobs ADD CONSTRAINT github_jobs_kind_check
  CHECK (kind IN ('pull_files', 'factory_check', 'linear_mentions'));
