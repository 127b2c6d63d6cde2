/**
 * Factory settings this deployment accepts but does not act on everywhere, and what it does with them: shown
 * as `FF_NOT_SUPPORTED_HERE` warnings at validate and apply (ValidationContext.deploymentNotes). Remove a
 * line when the setting is implemented.
 */
import type { DeploymentNotes } from '../../definitions/context.ts';

export const DEPLOYMENT_NOTES: DeploymentNotes = {
  runnerInstanceShape:
    'the local executor and self-hosted workers run agents on their own machine and ignore `instanceShape`; the Kubernetes operator sets the pod resources from it',
  runnerSetupCommands:
    'the local executor and self-hosted workers do not run `setupCommands`; the Kubernetes operator runs them before the agent',
  macosRunner:
    'macOS runners are not provisioned: the local executor runs the agent on its own machine whatever the platform, the Kubernetes operator refuses the run (`runner_unsupported`)',
};
