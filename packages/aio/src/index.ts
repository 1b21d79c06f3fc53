// Public API of @sbx/aio: the all-in-one sandbox client, its container backends and the
// provisioner client.

// --- sandbox client
export {
  AioSandbox,
  DEFAULT_NO_CHANGE_TIMEOUT_SECONDS,
  DEFAULT_ENV_COMMAND_TIMEOUT_SECONDS,
} from './aio-sandbox.js';
export type { AioSandboxOptions } from './aio-sandbox.js';
export { BASH_EXEC_UNSUPPORTED_MESSAGE } from './bash-exec-unsupported.js';
export { ERROR_OBSERVATION_SIGNATURE, hasErrorObservation } from './error-observation.js';
export { SCOPE_NO_LONGER_ACTIVE_MESSAGE } from './command-scopes.js';
export { MAX_DOWNLOAD_BYTES, checkDownloadPath } from './download-path.js';
export { assembleOutput, frameShellCommand, parseFramedOutput } from './command-output.js';
export type { CommandOutcome, FramedCommand } from './command-output.js';

// --- transport
export { shouldTrustEnvProxy } from './proxy-policy.js';
export { AioHttpClient, DEFAULT_REQUEST_TIMEOUT_MS } from './aio-http.js';
export type { AioHttpClientOptions, AioRequestOptions } from './aio-http.js';
export { AioHttpError } from './aio-http-error.js';
