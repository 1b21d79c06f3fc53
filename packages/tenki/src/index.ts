// Public API of @sbx/tenki.
export { TenkiSandboxProvider, createTenkiProvider } from './tenki-provider.js';
export { BOOTSTRAP_MARKER, bootstrapScript } from './tenki-bootstrap.js';
export type { TenkiProviderOptions } from './tenki-provider.js';
export { TenkiSandbox } from './tenki-sandbox.js';
export {
  COMMAND_DEADLINE_GRACE_MS,
  MAX_DOWNLOAD_BYTES,
  SANDBOX_CLOSED_MESSAGE,
  STREAM_CHUNK_BYTES,
} from './tenki-sandbox-options.js';
export type { TenkiSandboxOptions, TenkiTerminalListener } from './tenki-sandbox-options.js';
export { TENKI_CLIENT_FACTORY_EXPORT, loadTenkiClient } from './tenki-client.js';
export type {
  TenkiClient,
  TenkiClientFactory,
  TenkiClientOptions,
  TenkiCreateOptions,
  TenkiExecOptions,
  TenkiExecResult,
  TenkiFs,
  TenkiRemoteSandbox,
  TenkiStat,
} from './tenki-client.js';
export {
  DEFAULT_MAX_DURATION_SECONDS,
  DEFAULT_TENKI_HEALTH_CHECK_TIMEOUT_SECONDS,
  DEFAULT_TENKI_HOME_DIR,
  DEFAULT_TENKI_NAME_PREFIX,
  DEFAULT_TENKI_READY_TIMEOUT_SECONDS,
  REFERENCE_TENKI_NAME_PREFIX,
  TENKI_BLOCK_KEYS,
  TENKI_BOOTSTRAP_TIMEOUT_SECONDS,
  resolveTenkiSettings,
} from './tenki-config.js';
export type { TenkiSettings } from './tenki-config.js';
export {
  TERMINAL_ERROR_CODES,
  TERMINAL_ERROR_NAMES,
  isTerminalTenkiError,
  tenkiFileProblem,
} from './tenki-errors.js';
export type { TenkiFileProblem } from './tenki-errors.js';

import { TenkiSandboxProvider } from './tenki-provider.js';
export default TenkiSandboxProvider;
export { validateConfigBlock } from './tenki-config.js';
