/** Errors shaped like the E2B SDK's, as the fake control plane and its VMs throw them. */

/** An error shaped like the SDK's (the `name` is what callers classify by). */
export function sdkError(name: string, message: string, extra: object = {}): Error {
  const error = new Error(message);
  error.name = name;
  return Object.assign(error, extra);
}

export const fakeErrors = {
  connectNotFound: (id: string) =>
    sdkError('SandboxNotFoundError', `Paused sandbox ${id} not found`),
  notFound: (id: string) => sdkError('SandboxNotFoundError', `Sandbox ${id} not found`),
  notRunning: () => sdkError('SandboxNotFoundError', 'Sandbox is probably not running anymore'),
  envdGone: () =>
    sdkError(
      'TimeoutError',
      "The sandbox was not found: This error is likely due to sandbox timeout. You can modify the sandbox timeout by passing 'timeoutMs' when starting the sandbox or calling '.setTimeout' on the sandbox with the desired timeout.",
    ),
  fileNotFound: (p: string) => sdkError('FileNotFoundError', `path '${p}' does not exist`),
  commandTimeout: () =>
    sdkError(
      'TimeoutError',
      "deadline_exceeded: This error is likely due to exceeding 'timeoutMs' — the total time a long running request (like command execution or directory watch) can be active.",
    ),
  connectionReset: () => new Error('Connection reset by peer'),
};
