// Public API of @sbx/boxlite.
export { BoxliteProvider, createBoxliteProvider } from './boxlite-provider.js';
export type { BoxIdentity, BoxliteProviderOptions, WarmBox } from './boxlite-provider.js';
export {
  BASE64_CHUNK_CHARS,
  BoxliteSandbox,
  COMMAND_DEADLINE_GRACE_MS,
  MAX_TRANSFER_BYTES,
  SANDBOX_CLOSED_MESSAGE,
} from './boxlite-sandbox.js';
export type { BoxliteSandboxOptions, TerminalFailureListener } from './boxlite-sandbox.js';
export {
  BOXLITE_BLOCK_KEYS,
  DEFAULT_BOXLITE_IMAGE,
  DEFAULT_BOX_NAME_PREFIX,
  DEFAULT_HEALTH_CHECK_TIMEOUT_SECONDS,
  REFERENCE_BOX_NAME_PREFIX,
  resolveBoxliteSettings,
} from './boxlite-config.js';
export type { BoxliteSettings } from './boxlite-config.js';
export type {
  BoxliteBoxHandle,
  BoxliteBoxSpec,
  BoxliteBoxSummary,
  BoxliteExecOptions,
  BoxliteExecResult,
  BoxliteRuntime,
} from './boxlite-runtime.js';
export { BOXLITE_SDK_PACKAGE, createSdkBoxliteRuntime } from './sdk-runtime.js';
export type { SdkBoxliteRuntimeOptions } from './sdk-runtime.js';
export {
  DEFAULT_RETRYABLE_MARKERS,
  DEFAULT_TERMINAL_MARKERS,
  isTerminalBoxError,
} from './terminal-errors.js';
export type { TerminalMarkers } from './terminal-errors.js';
export {
  KVM_DEVICE,
  VirtualizationUnavailableError,
  assertVirtualizationAvailable,
} from './virtualization.js';
export type { FsAccessProbe, VirtualizationProblem } from './virtualization.js';

import { BoxliteProvider } from './boxlite-provider.js';
export default BoxliteProvider;
export { validateConfigBlock } from './boxlite-config.js';
