// Public API of @sbx/opensandbox.
import { OpenSandboxProvider } from './opensandbox-provider.js';

export {
  OpenSandboxProvider,
  createOpenSandboxProvider,
  BOOTSTRAP_DIRECTORIES,
  OPENSANDBOX_METADATA,
  OPENSANDBOX_PROVIDER_TAG_VALUE,
  PROVIDER_SHUT_DOWN_MESSAGE,
  PROVIDER_SHUT_DOWN_DURING_ACQUIRE_MESSAGE,
} from './opensandbox-provider.js';
export type {
  OpenSandboxIdentity,
  OpenSandboxProviderOptions,
  WarmOpenSandbox,
} from './opensandbox-provider.js';
export { OpenSandboxSandbox } from './opensandbox-sandbox.js';
export {
  MAX_DOWNLOAD_BYTES,
  SANDBOX_CLOSED_MESSAGE,
  WRITE_FILE_MODE,
} from './opensandbox-sandbox-options.js';
export type {
  OpenSandboxSandboxOptions,
  ProbeResult,
  TerminalFailureListener,
} from './opensandbox-sandbox-options.js';
export {
  BOOTSTRAP_TIMEOUT_SECONDS,
  COMMAND_TTL_GRACE_SECONDS,
  DEFAULT_OPENSANDBOX_IMAGE,
  DEFAULT_READY_TIMEOUT_SECONDS,
  DEFAULT_REQUEST_TIMEOUT_SECONDS,
  DEFAULT_SANDBOX_LIFETIME_SECONDS,
  HEALTH_CHECK_TIMEOUT_SECONDS,
  OPENSANDBOX_BLOCK_KEYS,
  OPEN_SANDBOX_API_KEY_ENV,
  OPEN_SANDBOX_DOMAIN_ENV,
  connectionWarnings,
  effectiveEndpoint,
  resolveOpenSandboxSettings,
} from './opensandbox-config.js';
export type { OpenSandboxProviderConfig, OpenSandboxSettings } from './opensandbox-config.js';
export {
  OPENSANDBOX_PROVIDER_PACKAGE,
  OPENSANDBOX_SDK_PACKAGE,
  loadOpenSandboxSdk,
} from './opensandbox-sdk.js';
export type {
  OpenSandboxCommands,
  OpenSandboxConnectionConfig,
  OpenSandboxConnectionOptions,
  OpenSandboxCreateOptions,
  OpenSandboxExecution,
  OpenSandboxExecutionError,
  OpenSandboxFiles,
  OpenSandboxListFilter,
  OpenSandboxListPage,
  OpenSandboxManager,
  OpenSandboxManagerStatic,
  OpenSandboxOutputMessage,
  OpenSandboxProtocol,
  OpenSandboxRemote,
  OpenSandboxRunOptions,
  OpenSandboxSandboxInfo,
  OpenSandboxSandboxStatic,
  OpenSandboxSdk,
  OpenSandboxWriteEntry,
} from './opensandbox-sdk.js';
export {
  TERMINAL_ERROR_CODES,
  UNHEALTHY_ERROR_NAME,
  isTerminalRemoteError,
  statusCodeOf,
} from './terminal-errors.js';
export type { RemoteOperation } from './terminal-errors.js';
export { exitCodeOf, joinOutputLines } from './command-output.js';

/** `use: "@sbx/opensandbox"` loads this: the provider class. */
export default OpenSandboxProvider;
export { validateConfigBlock } from './opensandbox-config.js';
