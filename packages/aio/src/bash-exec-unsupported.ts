/**
 * Returned (as the command's result) for a command with per-call environment variables when the
 * sandbox image has no `POST /v1/bash/exec`. Retrying cannot help, so the text speaks to whoever
 * operates the deployment. After the first 404 the sandbox returns it without another request.
 */
export const BASH_EXEC_UNSUPPORTED_MESSAGE =
  'Error: this sandbox image cannot inject environment variables into a single command ' +
  '(POST /v1/bash/exec answered 404), and commands that need them, such as skills that declare ' +
  'required-secrets, cannot run. Retrying will not help; the deployment must change: use an ' +
  'all-in-one-sandbox image of version 1.9.3 or later (set `sandbox.image`, e.g. pinned to ' +
  'the 1.11.0 tag) and recreate the sandbox container.';
