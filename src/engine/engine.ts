/**
 * The run engine's statements: every change of a run or an execution that another folder makes (the Run API,
 * the executors and the recorder, self-hosted workers, the Kubernetes Job executor, schedules) is one of these,
 * or one of the engine's own modules over them: the one claim of every executor kind (`claim.ts`), the direct
 * hand-off (`hand-off.ts`), start, lease, release and finish (`lifecycle.ts`), the reaper (`reaper.ts`). Each is
 * one statement of `sql.ts` or one call of a queue function of `functions.sql`; a state change is a
 * compare-and-set by a transition of `state-machine.ts`. Docs: docs/architecture.md, "The life of a run".
 */
export type {
  ClaimedFactory,
  ClaimInputs,
  ClaimParams,
  ClaimRow,
  ClaimTargetParams,
  CreatedRun,
  DispatchGuard,
  EndParams,
  ExpiredExecution,
  InsertRun,
  LiveRow,
  StartParams,
  WorkerRegistration,
} from './sql.ts';
export {
  // creation
  isDispatchGuardRefusal,
  insertRun,
  insertRuns,
  insertRunsParameter,
  setRunActsAs,
  // the state machine
  applyRunEvent,
  cancelRunTree,
  cancelRuns,
  // concurrency keys
  openKeyRuns,
  setRunConcurrency,
  supersedeRunTree,
  // the queue: the one claim of every executor kind (claim.ts), hand-off, start, end
  ayClaimRuns,
  ayCreateAndClaimServiceRuns,
  ayStartExecutions,
  ayEndExecutions,
  // leases and executions (the Job executor's, a reconnected worker's)
  heartbeatExecutions,
  checkExecutions,
  releaseExecution,
  lockExpiredExecutions,
  endExecution,
  adoptExecutions,
  runsWithUnconsumedFollowups,
  // what a run's row carries
  appendRunEvents,
  appendEventsOfRuns,
  touchRun,
  appendRunArtifacts,
  setWaitingMessages,
  setRunScheduleInfo,
} from './sql.ts';
