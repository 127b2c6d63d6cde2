-- The execution queue's functions (src/engine/functions.ts installs them; docs/architecture.md, "Database
-- functions"). Edit them here only, never in a migration, and raise EXECUTION_FUNCTIONS.version with each change.
-- A changed signature or result needs a `DROP FUNCTION IF EXISTS` of the old one before its new definition.
--
-- Why functions: each is planned once per connection (`plan_cache_mode = force_generic_plan`), not on every
-- call, and a claim, a start or an end is one round trip.

-- Concurrency keys and maxActiveRuns (docs/governance.md, "Concurrency keys"). A run counts as active while
-- CLAIMED or INPROGRESS: QUEUED and PENDING runs wait, BLOCKED and the other end states hold no executor.
--
-- ay_concurrency_open: whether a queued run of a factory may be taken now, as this statement's snapshot sees it:
-- its key has fewer than its limit active, and its factory fewer than its maxActiveRuns. The lock functions
-- below filter with it, so that held runs never take the places of runs that may start. PL/pgSQL, not SQL: a SQL
-- function with sub-selects is not inlined, and its statements would be planned again at every claim.

CREATE OR REPLACE FUNCTION ay_concurrency_open(p_factory text, p_key text, p_limit integer)
RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF p_key IS NOT NULL AND (
    SELECT count(*) FROM (
      SELECT 1 FROM runs a
      WHERE a.factory_id = p_factory AND a.concurrency_key = p_key AND a.state IN ('CLAIMED', 'INPROGRESS')
      LIMIT greatest(coalesce(p_limit, 1), 0)) s) >= coalesce(p_limit, 1) THEN
    RETURN false;
  END IF;
  RETURN NOT EXISTS (
    SELECT 1 FROM factories f
    WHERE f.id = p_factory AND f.max_active_runs IS NOT NULL
      AND (SELECT count(*) FROM (
             SELECT 1 FROM runs a WHERE a.factory_id = p_factory AND a.state IN ('CLAIMED', 'INPROGRESS')
             LIMIT f.max_active_runs) s) >= f.max_active_runs);
END
$$;

-- ay_concurrency_admit: of runs a claim has locked (p_ids, in the claim's order), those it may take. Two claims
-- at once must never start more than a limit: the claim takes a transaction-level advisory lock per key and per
-- capped factory among its runs (in one order, so two claims never wait on each other in a cycle), then counts
-- the active runs in a statement of its own, whose snapshot sees every claim that held those locks before.
-- Runs it leaves stay QUEUED, their status_message saying why, and so do the other queued runs of their key or
-- factory (skipping rows another transaction holds: waiting on them could close a cycle).
-- Runs of no key and no capped factory pass without a lock or a count. Its look-ups are by primary key: without
-- enable_seqscan = off, a generic plan cached while `runs` was nearly empty scanned it whole for the session's
-- life, until an ANALYZE (docs/decisions.md, "The concurrency check never scans runs").

CREATE OR REPLACE FUNCTION ay_concurrency_admit(p_ids text[])
RETURNS text[]
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $$
#variable_conflict use_column
DECLARE
  v_locks bigint[];
  v_lock bigint;
  v_admitted text[];
BEGIN
  SELECT array_agg(DISTINCT l.k ORDER BY l.k) INTO v_locks FROM (
    SELECT hashtextextended(r.factory_id || chr(10) || r.concurrency_key, 4140) AS k
    FROM runs r WHERE r.id = ANY (p_ids) AND r.factory_id IS NOT NULL AND r.concurrency_key IS NOT NULL
    UNION ALL
    SELECT hashtextextended(f.id, 4141)
    FROM runs r JOIN factories f ON f.id = r.factory_id WHERE r.id = ANY (p_ids) AND f.max_active_runs IS NOT NULL
  ) l;
  IF v_locks IS NULL THEN
    RETURN p_ids;
  END IF;
  FOREACH v_lock IN ARRAY v_locks LOOP
    PERFORM pg_advisory_xact_lock(v_lock);
  END LOOP;

  WITH c AS (
    SELECT r.id, r.factory_id, r.concurrency_key, r.concurrency_limit, f.max_active_runs, u.ord
    FROM unnest(p_ids) WITH ORDINALITY AS u(id, ord) JOIN runs r ON r.id = u.id
    LEFT JOIN factories f ON f.id = r.factory_id AND f.max_active_runs IS NOT NULL
  ), by_key AS (
    SELECT c.*, row_number() OVER (PARTITION BY c.factory_id, c.concurrency_key ORDER BY c.ord) AS place,
      (SELECT count(*) FROM runs a WHERE a.factory_id = c.factory_id AND a.concurrency_key = c.concurrency_key
         AND a.concurrency_key IS NOT NULL AND a.state IN ('CLAIMED', 'INPROGRESS')) AS active
    FROM c
  ), key_ok AS (
    SELECT k.* FROM by_key k
    WHERE k.factory_id IS NULL OR k.concurrency_key IS NULL OR k.active + k.place <= coalesce(k.concurrency_limit, 1)
  ), by_factory AS (
    SELECT k.id, k.ord, k.max_active_runs,
      row_number() OVER (PARTITION BY k.factory_id ORDER BY k.ord) AS place,
      (SELECT count(*) FROM runs a WHERE a.factory_id = k.factory_id AND a.state IN ('CLAIMED', 'INPROGRESS')) AS active
    FROM key_ok k
  )
  SELECT array_agg(b.id ORDER BY b.ord) INTO v_admitted
  FROM by_factory b WHERE b.max_active_runs IS NULL OR b.active + b.place <= b.max_active_runs;

  -- why the others wait: their key at its limit, else their factory at its cap. Only when this claim leaves some
  -- of its runs: the runs of a key a claim fills were its candidates too (the lock functions take every run of a
  -- key that may start), and a run queued while its key is full is marked when it fires.
  IF cardinality(coalesce(v_admitted, '{}'::text[])) = cardinality(p_ids) THEN
    RETURN v_admitted;
  END IF;
  WITH admitted AS (
    SELECT r.factory_id, r.concurrency_key FROM runs r WHERE r.id = ANY (coalesce(v_admitted, '{}'::text[]))
  ), touched AS (
    SELECT DISTINCT r.factory_id, r.concurrency_key, coalesce(r.concurrency_limit, 1) AS key_limit, f.max_active_runs
    FROM runs r LEFT JOIN factories f ON f.id = r.factory_id AND f.max_active_runs IS NOT NULL
    WHERE r.id = ANY (p_ids) AND r.factory_id IS NOT NULL
  ), groups AS (
    SELECT t.factory_id, t.concurrency_key, t.key_limit, t.max_active_runs,
      t.concurrency_key IS NOT NULL AND (
        (SELECT count(*) FROM runs a WHERE a.factory_id = t.factory_id AND a.concurrency_key = t.concurrency_key
           AND a.concurrency_key IS NOT NULL AND a.state IN ('CLAIMED', 'INPROGRESS'))
        + (SELECT count(*) FROM admitted d WHERE d.factory_id = t.factory_id AND d.concurrency_key = t.concurrency_key)
      ) >= t.key_limit AS key_full,
      t.max_active_runs IS NOT NULL AND (
        (SELECT count(*) FROM runs a WHERE a.factory_id = t.factory_id AND a.state IN ('CLAIMED', 'INPROGRESS'))
        + (SELECT count(*) FROM admitted d WHERE d.factory_id = t.factory_id)
      ) >= t.max_active_runs AS factory_full
    FROM touched t
  ), marked AS (
    -- two index look-ups (runs_concurrency_open, runs_factory_active), only for groups that are full
    SELECT DISTINCT ON (m.id) m.id, m.message FROM (
      SELECT q.id, 0 AS pref, format('queued: concurrency key %s at limit %s', g.concurrency_key, g.key_limit) AS message
      FROM groups g JOIN runs q ON q.factory_id = g.factory_id AND q.concurrency_key = g.concurrency_key
        AND q.concurrency_key IS NOT NULL AND q.state = 'QUEUED'
      WHERE g.key_full
      UNION ALL
      SELECT q.id, 1, format('queued: factory at maxActiveRuns %s', f.max_active_runs)
      FROM (SELECT DISTINCT g.factory_id, g.max_active_runs FROM groups g WHERE g.factory_full) f
      JOIN runs q ON q.factory_id = f.factory_id AND q.state = 'QUEUED'
    ) m
    WHERE m.id <> ALL (coalesce(v_admitted, '{}'::text[]))
    ORDER BY m.id, m.pref
  ), lockable AS (
    SELECT r.id FROM runs r JOIN marked m ON m.id = r.id WHERE r.state = 'QUEUED' FOR UPDATE OF r SKIP LOCKED
  )
  UPDATE runs r SET status_message = jsonb_build_object('message', m.message)
  FROM marked m JOIN lockable l ON l.id = m.id
  WHERE r.id = m.id AND r.status_message IS DISTINCT FROM jsonb_build_object('message', m.message);

  RETURN coalesce(v_admitted, '{}'::text[]);
END
$$;

-- Dispatch. The lock functions lock (FOR UPDATE SKIP LOCKED) the queued runs to claim, best first, inside the
-- caller's transaction; the caller moves them through the state machine.
--
-- The service's executors: per team oldest first; teams interleaved by active runs plus place in their
-- queue, ties to the team served least recently. Runs of Kubernetes-executed factories are the operator's.

CREATE OR REPLACE FUNCTION ay_lock_service_runs(p_harnesses text[], p_limit integer)
RETURNS TABLE (out_id text, out_harness text, out_attempt integer)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH RECURSIVE queued_teams(team_id) AS (
    (SELECT q.team_id FROM runs q WHERE q.state = 'QUEUED' AND q.worker_host IS NULL ORDER BY q.team_id LIMIT 1)
    UNION ALL
    SELECT (SELECT q.team_id FROM runs q WHERE q.state = 'QUEUED' AND q.worker_host IS NULL AND q.team_id > t.team_id
            ORDER BY q.team_id LIMIT 1)
    FROM queued_teams t WHERE t.team_id IS NOT NULL
  ),
  active AS (
    SELECT a.team_id, count(*)::int AS n FROM runs a WHERE a.state IN ('CLAIMED', 'INPROGRESS') GROUP BY a.team_id
  ),
  candidates AS (
    SELECT c.id, c.team_id, c.created_at,
      row_number() OVER (PARTITION BY c.team_id ORDER BY c.created_at, c.id) AS place,
      (SELECT max(e.claimed_at) FROM executions e WHERE e.team_id = t.team_id) AS served_at
    FROM queued_teams t CROSS JOIN LATERAL (
      SELECT q.id, q.team_id, q.created_at FROM runs q
      WHERE q.team_id = t.team_id AND q.state = 'QUEUED' AND q.worker_host IS NULL
        AND coalesce(nullif(lower(q.config->'harness'->>'type'), ''), 'oz') = ANY(p_harnesses)
        AND (q.factory_id IS NULL OR NOT EXISTS (
          SELECT 1 FROM kubernetes_factories k WHERE k.factory_id = q.factory_id AND k.deleted_at IS NULL AND k.executor = 'kubernetes'))
        AND (q.factory_id IS NULL OR ay_concurrency_open(q.factory_id, q.concurrency_key, q.concurrency_limit))
      ORDER BY q.created_at, q.id
      LIMIT p_limit
    ) c
    WHERE t.team_id IS NOT NULL
  ),
  ranked AS (
    SELECT c.id, coalesce(a.n, 0) + c.place AS turn, c.served_at, c.created_at
    FROM candidates c LEFT JOIN active a ON a.team_id = c.team_id
  )
  SELECT r.id, r.config->'harness'->>'type', (SELECT count(*)::int + 1 FROM executions x WHERE x.run_id = r.id)
  FROM runs r JOIN ranked k ON k.id = r.id
  WHERE r.state = 'QUEUED'
  ORDER BY k.turn, k.served_at NULLS FIRST, k.created_at, r.id
  LIMIT p_limit
  FOR UPDATE OF r SKIP LOCKED;
END
$$;

-- A self-hosted worker: the team's queued runs whose worker_host is its ID, oldest first, that its registration
-- may receive (docs/security.md, "Self-hosted workers"): a run acting as a member (credentialStrategy CREATOR,
-- `acts_as`) carries that member's own tokens, so it goes only to a worker connected with a team admin key
-- (p_trusted) or registered by that member (p_registrant: the subject who made the worker token).

DROP FUNCTION IF EXISTS ay_claim_worker_runs(text, text, text[], integer, text[], text[], text[], text, integer, text, text[]);
DROP FUNCTION IF EXISTS ay_lock_worker_runs(text, text, text[], integer);

CREATE OR REPLACE FUNCTION ay_lock_worker_runs(
  p_team text, p_worker text, p_harnesses text[], p_limit integer, p_trusted boolean, p_registrant text)
RETURNS TABLE (out_id text, out_harness text, out_attempt integer)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  SELECT r.id, r.config->'harness'->>'type', (SELECT count(*)::int + 1 FROM executions x WHERE x.run_id = r.id)
  FROM runs r
  WHERE r.team_id = p_team AND r.worker_host = p_worker AND r.state = 'QUEUED'
    AND coalesce(nullif(lower(r.config->'harness'->>'type'), ''), 'oz') = ANY(p_harnesses)
    AND (p_trusted OR r.acts_as IS NULL OR EXISTS (
      SELECT 1 FROM integration_identities i
      WHERE i.team_id = r.team_id AND i.subject_id = p_registrant AND i.provider = r.acts_as->>'provider'
        AND lower(i.external_id) = lower(r.acts_as->>'account')))
    AND (r.factory_id IS NULL OR ay_concurrency_open(r.factory_id, r.concurrency_key, r.concurrency_limit))
  ORDER BY r.created_at, r.id
  LIMIT p_limit
  FOR UPDATE OF r SKIP LOCKED;
END
$$;

-- Claims locked runs (the rows a lock function above returned in this statement): QUEUED → CLAIMED with the
-- transition the caller passes (the state machine's `claim`), their executions with their leases, and what
-- their assignments need. `factory`, for a run of a factory (null otherwise, or when it was deleted): what its
-- applied definition sets for the execution, so that a start reads nothing more for it — its runner's image,
-- limits and network (the run's `runner_id`, else its agent's runner), the run's `secrets` (its automation's,
-- else its agent's, else the factory's) and the factory's `integrations` (src/execution/runner-settings.ts),
-- read from `factories.run_settings` (migration 0094), not from the whole definition.

-- (their result gained `factory`: the functions that answer it are dropped and made again)
DROP FUNCTION IF EXISTS ay_create_and_claim_service_runs(jsonb, text[], integer, text[], text[], text[], text, integer, text, text[]);
DROP FUNCTION IF EXISTS ay_claim_runs(text, text, text, boolean, text, text[], text, text[], integer, text[], text[], text[], text, integer, text, text[]);
DROP FUNCTION IF EXISTS ay_claim_locked(text[], text[], integer[], text[], text[], text[], text, text, integer, text, text[]);

CREATE OR REPLACE FUNCTION ay_claim_locked(
  p_ids text[], p_spellings text[], p_attempts integer[], p_execution_ids text[],
  p_harness_spellings text[], p_harness_types text[], p_executor text, p_worker text, p_lease_ms integer,
  p_to text, p_from text[])
RETURNS TABLE (run jsonb, execution_id text, attempt integer, harness text, previous json, followups json, attachments json,
  factory json)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
  v_admitted text[];
BEGIN
  v_admitted := ay_concurrency_admit(p_ids);
  RETURN QUERY
  WITH x AS (
    SELECT u.id, u.execution_id, u.attempt, h.type AS harness, u.ord
    FROM unnest(p_ids, p_spellings, p_attempts, p_execution_ids) WITH ORDINALITY AS u(id, spelling, attempt, execution_id, ord)
    JOIN unnest(p_harness_spellings, p_harness_types) AS h(spelling, type) ON h.spelling = coalesce(nullif(lower(u.spelling), ''), 'oz')
    WHERE u.id = ANY (v_admitted)
  ), moved AS (
    UPDATE runs r SET state = p_to, updated_at = ay_now(), execution_id = x.execution_id, status_message = NULL
    FROM x WHERE r.id = x.id AND r.state = ANY(p_from) RETURNING r.*
  ), created AS (
    INSERT INTO executions (id, run_id, team_id, attempt, executor, worker_id, harness, lease_expires_at)
    SELECT x.execution_id, m.id, m.team_id, x.attempt, p_executor, p_worker, x.harness, ay_now() + p_lease_ms * interval '1 millisecond'
    FROM moved m JOIN x ON x.id = m.id
    RETURNING 1
  )
  SELECT to_jsonb(m), x.execution_id, x.attempt, x.harness,
    (SELECT coalesce(json_agg(json_build_object('id', e.id, 'agent_session_id', e.agent_session_id, 'started', e.started_at IS NOT NULL)
       ORDER BY e.attempt DESC), '[]'::json) FROM executions e WHERE e.run_id = m.id),
    (SELECT coalesce(json_agg(json_build_object('id', f.id, 'message', f.message) ORDER BY f.created_at, f.id), '[]'::json)
       FROM run_followups f WHERE f.run_id = m.id AND f.consumed_by_execution IS NULL),
    (SELECT coalesce(json_agg(json_build_object('file_name', a.file_name, 'mime_type', a.mime_type, 'data', encode(a.data, 'base64'))
       ORDER BY a.file_name), '[]'::json) FROM run_attachments a WHERE a.run_id = m.id),
    (SELECT json_build_object(
        'image', rn.runner->'platform'->>'dockerImage', 'limits', rn.runner->'limits', 'network', rn.runner->'network',
        'secrets', coalesce(
          (SELECT f.run_settings->'automations'->am.name->'secrets' FROM automations am WHERE am.id = m.automation_id),
          f.run_settings->'agents'->(m.config->>'name')->'secrets',
          f.run_settings->'secrets'),
        'integrations', f.run_settings->'integrations')
       FROM factories f
       CROSS JOIN LATERAL (SELECT f.run_settings->'runners'->coalesce(m.config->>'runner_id',
                                    f.run_settings->'agents'->(m.config->>'name')->>'runner') AS runner) rn
      WHERE f.id = m.factory_id AND f.deleted_at IS NULL)
  FROM moved m JOIN x ON x.id = m.id
  ORDER BY x.ord;
END
$$;

-- Kubernetes Jobs (src/operator/job-executor.ts): queued runs of Factories whose `executor` is `kubernetes`,
-- of one namespace or all, oldest first. Runs routed to a self-hosted worker (a worker_host other than the
-- service's own names, p_hosts) are left to that worker.

CREATE OR REPLACE FUNCTION ay_lock_kubernetes_runs(p_hosts text[], p_namespace text, p_harnesses text[], p_limit integer)
RETURNS TABLE (out_id text, out_harness text, out_attempt integer)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  SELECT r.id, r.config->'harness'->>'type', (SELECT count(*)::int + 1 FROM executions x WHERE x.run_id = r.id)
  FROM runs r
  JOIN kubernetes_factories k ON k.factory_id = r.factory_id AND k.deleted_at IS NULL AND k.executor = 'kubernetes'
  WHERE r.state = 'QUEUED' AND (r.worker_host IS NULL OR r.worker_host = ANY(p_hosts))
    AND (p_namespace IS NULL OR k.namespace = p_namespace)
    AND coalesce(nullif(lower(r.config->'harness'->>'type'), ''), 'oz') = ANY(p_harnesses)
    AND ay_concurrency_open(r.factory_id, r.concurrency_key, r.concurrency_limit)
  ORDER BY r.created_at, r.id
  LIMIT p_limit
  FOR UPDATE OF r SKIP LOCKED;
END
$$;

-- The one claim of every executor kind (src/engine/claim.ts), in one call: the lock function of p_kind
-- ('service', 'worker' with p_team, p_worker, p_trusted, p_registrant, or 'kubernetes' with p_hosts and
-- p_namespace), then ay_claim_locked. A claim that finds nothing to take ends right after the lock query.

DROP FUNCTION IF EXISTS ay_claim_service_runs(text[], integer, text[], text[], text[], text, integer, text, text[]);
DROP FUNCTION IF EXISTS ay_claim_worker_runs(text, text, boolean, text, text[], integer, text[], text[], text[], text, integer, text, text[]);

CREATE OR REPLACE FUNCTION ay_claim_runs(
  p_kind text, p_team text, p_worker text, p_trusted boolean, p_registrant text, p_hosts text[], p_namespace text,
  p_harnesses text[], p_limit integer, p_execution_ids text[], p_harness_spellings text[], p_harness_types text[],
  p_executor text, p_lease_ms integer, p_to text, p_from text[])
RETURNS TABLE (run jsonb, execution_id text, attempt integer, harness text, previous json, followups json, attachments json,
  factory json)
LANGUAGE plpgsql AS $$
DECLARE
  v_ids text[];
  v_spellings text[];
  v_attempts integer[];
BEGIN
  IF p_kind = 'service' THEN
    SELECT array_agg(l.out_id ORDER BY l.ord), array_agg(l.out_harness ORDER BY l.ord), array_agg(l.out_attempt ORDER BY l.ord)
      INTO v_ids, v_spellings, v_attempts
    FROM ay_lock_service_runs(p_harnesses, p_limit) WITH ORDINALITY AS l(out_id, out_harness, out_attempt, ord);
  ELSIF p_kind = 'worker' THEN
    SELECT array_agg(l.out_id ORDER BY l.ord), array_agg(l.out_harness ORDER BY l.ord), array_agg(l.out_attempt ORDER BY l.ord)
      INTO v_ids, v_spellings, v_attempts
    FROM ay_lock_worker_runs(p_team, p_worker, p_harnesses, p_limit, p_trusted, p_registrant)
      WITH ORDINALITY AS l(out_id, out_harness, out_attempt, ord);
  ELSIF p_kind = 'kubernetes' THEN
    SELECT array_agg(l.out_id ORDER BY l.ord), array_agg(l.out_harness ORDER BY l.ord), array_agg(l.out_attempt ORDER BY l.ord)
      INTO v_ids, v_spellings, v_attempts
    FROM ay_lock_kubernetes_runs(p_hosts, p_namespace, p_harnesses, p_limit)
      WITH ORDINALITY AS l(out_id, out_harness, out_attempt, ord);
  ELSE
    RAISE EXCEPTION 'ay_claim_runs: unknown executor kind %', p_kind;
  END IF;
  IF v_ids IS NULL THEN
    RETURN;
  END IF;
  RETURN QUERY SELECT * FROM ay_claim_locked(v_ids, v_spellings, v_attempts, p_execution_ids, p_harness_spellings, p_harness_types,
    p_executor, CASE WHEN p_kind = 'worker' THEN p_worker END, p_lease_ms, p_to, p_from);
END
$$;

-- Direct hand-off (src/engine/hand-off.ts): runs created in a process whose executors have free slots are
-- inserted QUEUED and, in the same statement, claimed by that process's executors the way a wake-up would
-- claim them. The claim may take older runs of other teams instead of the new ones; whatever it leaves stays
-- QUEUED and is announced by the caller.
-- * The insert is static, planned once per connection: the columns are those of insertRuns in src/engine/sql.ts
--   (the hand-off checks at start that insertRuns writes exactly these, and stays off otherwise).
-- * When nothing else is queued for the service's executors and the claim may take every new run, the fair
--   choice between teams (ay_lock_service_runs) can only answer "every new run these executors take": that
--   set is taken directly. Otherwise the usual fair claim runs.

-- A child run dispatched with a run token the process has seen before (src/orchestration/routes.ts) carries a
-- guard instead of the token's own check: its insert is refused (SQLSTATE AY001) unless, as this statement sees
-- them, the token's execution still runs and is its run's current one (the parent named by the record), the parent
-- has fewer children and the factory fewer active runs than the limits, and the factory is the version the child's
-- configuration came from. The caller then checks the token again, and answers why. PL/pgSQL, not SQL: its
-- sub-selects would otherwise be planned again at every dispatch (half a millisecond on PostgreSQL).

CREATE OR REPLACE FUNCTION ay_dispatch_guard_holds(p_guard jsonb, p_parent text, p_factory text)
RETURNS boolean
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  RETURN EXISTS (
      SELECT 1 FROM run_tokens t
        JOIN executions e ON e.id = t.execution_id
        JOIN runs p ON p.id = t.run_id
       WHERE t.token_hash = p_guard->>'token_hash' AND t.run_id = p_parent AND e.ended_at IS NULL
         AND p.execution_id = t.execution_id AND p.team_id = t.team_id AND p.state IN ('CLAIMED', 'INPROGRESS'))
    AND (SELECT count(*) FROM runs c WHERE c.parent_run_id = p_parent) < (p_guard->>'max_children')::bigint
    AND (SELECT count(*) FROM runs a WHERE a.factory_id = p_factory
           AND a.state IN ('QUEUED', 'PENDING', 'CLAIMED', 'INPROGRESS')) < (p_guard->>'max_active')::bigint
    AND EXISTS (SELECT 1 FROM factories f WHERE f.id = p_factory AND f.deleted_at IS NULL
           AND date_trunc('milliseconds', f.updated_at) = (p_guard->>'factory_updated_at')::timestamptz);
END
$$;

CREATE OR REPLACE FUNCTION ay_create_and_claim_service_runs(
  p_runs jsonb, p_harnesses text[], p_limit integer, p_execution_ids text[], p_harness_spellings text[],
  p_harness_types text[], p_executor text, p_lease_ms integer, p_to text, p_from text[])
RETURNS TABLE (run jsonb, execution_id text, attempt integer, harness text, previous json, followups json, attachments json,
  factory json)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
  v_new text[];
  v_ids text[];
  v_spellings text[];
BEGIN
  IF EXISTS (
    SELECT 1 FROM jsonb_to_recordset(p_runs) AS g(parent_run_id text, factory_id text, guard jsonb)
     WHERE g.guard IS NOT NULL AND NOT ay_dispatch_guard_holds(g.guard, g.parent_run_id, g.factory_id)) THEN
    RAISE EXCEPTION 'ay_dispatch_guard: the run token''s check did not hold' USING ERRCODE = 'AY001';
  END IF;
  WITH inserted AS (
    INSERT INTO runs (
      id, team_id, title, prompt, state, source, config, config_name, model_id, environment_id, skill_spec,
      worker_host, creator_id, creator_type, creator_name, creator_email, factory_id, automation_id,
      delivery_id, schedule_id, parent_run_id, conversation_id, session_id, metadata, executor_id,
      executor_type, executor_name)
    SELECT
      id, team_id, title, prompt, state, source, config, config_name, model_id, environment_id, skill_spec,
      worker_host, creator_id, creator_type, creator_name, creator_email, factory_id, automation_id,
      delivery_id, schedule_id, parent_run_id, conversation_id, session_id, metadata, executor_id,
      executor_type, executor_name
    FROM jsonb_to_recordset(p_runs) AS r(
      id text, team_id text, title text, prompt text, state text, source text, config jsonb, config_name text,
      model_id text, environment_id text, skill_spec text, worker_host text, creator_id text,
      creator_type text, creator_name text, creator_email text, factory_id text, automation_id text,
      delivery_id text, schedule_id text, parent_run_id text, conversation_id text, session_id text,
      metadata jsonb, executor_id text, executor_type text, executor_name text)
    RETURNING id
  )
  SELECT array_agg(id) INTO v_new FROM inserted;
  IF p_limit <= 0 THEN
    RETURN;
  END IF;
  IF p_limit < cardinality(v_new) OR EXISTS (
    SELECT 1 FROM runs q WHERE q.state = 'QUEUED' AND q.worker_host IS NULL AND q.id <> ALL (v_new)
  ) THEN
    RETURN QUERY SELECT * FROM ay_claim_runs('service', NULL, NULL, false, NULL, '{}'::text[], NULL, p_harnesses, p_limit,
      p_execution_ids, p_harness_spellings, p_harness_types, p_executor, p_lease_ms, p_to, p_from);
    RETURN;
  END IF;
  -- the filters of ay_lock_service_runs; rows inserted by this transaction need no lock (nobody else sees them)
  SELECT array_agg(r.id ORDER BY r.created_at, r.id), array_agg(r.config->'harness'->>'type' ORDER BY r.created_at, r.id)
    INTO v_ids, v_spellings
  FROM runs r
  WHERE r.id = ANY (v_new) AND r.state = 'QUEUED' AND r.worker_host IS NULL
    AND coalesce(nullif(lower(r.config->'harness'->>'type'), ''), 'oz') = ANY (p_harnesses)
    AND (r.factory_id IS NULL OR NOT EXISTS (
      SELECT 1 FROM kubernetes_factories k WHERE k.factory_id = r.factory_id AND k.deleted_at IS NULL AND k.executor = 'kubernetes'));
  IF v_ids IS NULL THEN
    RETURN;
  END IF;
  -- new runs: their first execution
  RETURN QUERY SELECT * FROM ay_claim_locked(v_ids, v_spellings, array_fill(1, ARRAY[cardinality(v_ids)]), p_execution_ids,
    p_harness_spellings, p_harness_types, p_executor, NULL, p_lease_ms, p_to, p_from);
END
$$;

-- Starts executions: those still holding their lease are marked started (locked before their runs, as the
-- reaper locks them), their runs moved CLAIMED → INPROGRESS with the transition the caller passes (the state
-- machine's `start`, guarded by the run's current execution; `execution_location` set where p_locations names
-- one), and the follow-ups in their prompts consumed. Answers the runs that moved.

CREATE OR REPLACE FUNCTION ay_start_executions(
  p_run_ids text[], p_execution_ids text[], p_workspaces text[], p_leases integer[], p_messages jsonb[],
  p_followup_ids text[], p_followup_executions text[], p_to text, p_from text[], p_locations text[])
RETURNS TABLE (run_id text)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH input AS (
    SELECT * FROM unnest(p_run_ids, p_execution_ids, p_workspaces, p_leases, p_messages, p_locations)
      AS i(id, execution_id, workspace, lease, message, location)
  ), live AS (
    UPDATE executions e SET started_at = ay_now(), workspace = i.workspace, heartbeat_at = ay_now(),
      lease_expires_at = ay_now() + i.lease * interval '1 millisecond'
    FROM input i WHERE e.id = i.execution_id AND e.ended_at IS NULL RETURNING e.id
  ), x AS (
    SELECT i.id, i.execution_id, i.message, i.location FROM input i JOIN live l ON l.id = i.execution_id
  ), moved AS (
    UPDATE runs r SET state = p_to, updated_at = ay_now(), started_at = coalesce(r.started_at, ay_now()),
      status_message = x.message, execution_location = coalesce(x.location, r.execution_location)
    FROM x WHERE r.id = x.id AND r.state = ANY(p_from) AND r.execution_id = x.execution_id
    RETURNING r.id, r.execution_id
  ), consumed AS (
    UPDATE run_followups f SET consumed_by_execution = c.execution_id, consumed_at = ay_now()
    FROM unnest(p_followup_ids, p_followup_executions) AS c(id, execution_id) JOIN moved m ON m.execution_id = c.execution_id
    WHERE f.id = c.id AND f.consumed_by_execution IS NULL RETURNING 1
  )
  SELECT m.id FROM moved m;
END
$$;

-- The start of version 1 (no p_locations), for processes of the previous release during a rolling deploy.
CREATE OR REPLACE FUNCTION ay_start_executions(
  p_run_ids text[], p_execution_ids text[], p_workspaces text[], p_leases integer[], p_messages jsonb[],
  p_followup_ids text[], p_followup_executions text[], p_to text, p_from text[])
RETURNS TABLE (run_id text)
LANGUAGE sql AS $$
  SELECT * FROM ay_start_executions(p_run_ids, p_execution_ids, p_workspaces, p_leases, p_messages, p_followup_ids,
    p_followup_executions, p_to, p_from, NULL::text[])
$$;

-- The end of a batch of executions in one call (src/engine/lifecycle.ts) instead of a transaction of several
-- statements: on PGlite each would hold its only connection, on PostgreSQL each would be a round trip.
--
-- p_transitions holds the state machine's transitions the end uses (src/engine/state-machine.ts, passed by the
-- caller): {"succeed": {"to": ..., "from": [...]}, "fail": ..., "error": ..., "continue": ...}. Per
-- execution, p_events names the one its outcome applies (NULL: none, the run is left as it is). The columns
-- each event sets are those of applyRunEventMany in src/runs/.
--
-- In order, each statement seeing the previous ones (and, on PostgreSQL, what others committed meanwhile):
-- 1. the executions that still hold their lease are ended (locked before their runs, as the reaper does);
-- 2. their runs move by their event, a compare-and-set on the state and on the execution still being the
--    run's current one, their usage added (p_usages: amounts to add per key, NULL for none);
-- 3. a run that moved while a follow-up waited that its execution did not consume is queued again
--    (`continue`). A statement of its own on purpose: it sees a follow-up committed while 2 waited for the
--    run's row lock (one statement would read with the snapshot taken before the wait).
-- Answers the runs that moved, as they are at the end, and whether they were queued again.
--
-- Its plans are pinned: every statement looks rows up by primary key (run_followups by run) for a batch of at
-- most a few hundred, so nested loops over index lookups are right at any table size. Generic plans are made
-- at the first call of a session and PGlite never analyzes, so a first call on a young database would keep
-- sequential scans and hash joins for the life of the process; `(e.ended_at IS NULL) IS TRUE` keeps the
-- partial index of live executions, which cannot answer it, from being scanned once per execution.

CREATE OR REPLACE FUNCTION ay_end_executions(
  p_execution_ids text[], p_run_ids text[], p_outcomes text[], p_exit_codes integer[], p_sessions text[],
  p_workspaces text[], p_events text[], p_messages jsonb[], p_usages jsonb[], p_transitions jsonb)
RETURNS TABLE (run jsonb, requeued boolean)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
#variable_conflict use_column
DECLARE
  v_ended text[];
  v_moved text[];
  v_requeued text[];
BEGIN
  WITH ended AS (
    UPDATE executions e SET ended_at = ay_now(), outcome = x.outcome, exit_code = x.exit_code,
      agent_session_id = coalesce(x.session, e.agent_session_id), workspace = coalesce(x.workspace, e.workspace)
    FROM unnest(p_execution_ids, p_outcomes, p_exit_codes, p_sessions, p_workspaces) AS x(id, outcome, exit_code, session, workspace)
    WHERE e.id = x.id AND (e.ended_at IS NULL) IS TRUE
    RETURNING e.id
  )
  SELECT array_agg(ended.id) INTO v_ended FROM ended;
  IF v_ended IS NULL THEN
    RETURN;
  END IF;

  WITH moved AS (
    UPDATE runs r SET state = p_transitions->x.event->>'to', updated_at = ay_now(), finished_at = ay_now(),
      status_message = x.message,
      request_usage = CASE WHEN x.usage IS NULL THEN r.request_usage ELSE coalesce(r.request_usage, '{}'::jsonb) || coalesce((
        SELECT jsonb_object_agg(u.key,
          CASE WHEN jsonb_typeof(r.request_usage->u.key) = 'number' THEN (r.request_usage->>u.key)::numeric ELSE 0 END + u.value::numeric)
        FROM jsonb_each_text(x.usage) AS u(key, value)), '{}'::jsonb) END
    FROM unnest(p_execution_ids, p_run_ids, p_events, p_messages, p_usages) AS x(execution_id, id, event, message, usage)
    WHERE x.execution_id = ANY (v_ended) AND x.event IS NOT NULL
      AND r.id = x.id AND r.execution_id = x.execution_id AND (p_transitions->x.event->'from') ? r.state
    RETURNING r.id
  )
  SELECT array_agg(moved.id) INTO v_moved FROM moved;
  IF v_moved IS NULL THEN
    RETURN;
  END IF;

  WITH again AS (
    UPDATE runs r SET state = p_transitions->'continue'->>'to', updated_at = ay_now(), finished_at = NULL, status_message = NULL
    WHERE r.id = ANY (v_moved) AND (p_transitions->'continue'->'from') ? r.state
      AND EXISTS (SELECT 1 FROM run_followups f WHERE f.run_id = r.id AND f.consumed_by_execution IS NULL)
    RETURNING r.id
  )
  SELECT array_agg(again.id) INTO v_requeued FROM again;

  RETURN QUERY SELECT to_jsonb(r), r.id = ANY (coalesce(v_requeued, '{}'::text[])) FROM runs r WHERE r.id = ANY (v_moved);
END
$$;
