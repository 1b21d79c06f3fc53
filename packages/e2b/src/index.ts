// Public API of @sbx/e2b.
import { E2BSandboxProvider } from './e2b-sandbox-provider.js';

// --- provider
export { E2BSandboxProvider, createE2BProvider } from './e2b-sandbox-provider.js';
export type { E2BProviderInit, E2BCapacitySnapshot } from './e2b-provider-init.js';
export type { ReconciliationStats } from './e2b-reconciler.js';
export type {
  E2BSandboxSummary,
  E2BListSandboxesOptions,
  E2BReapOrphansOptions,
  E2BOrphanReapReport,
} from './e2b-inspection.js';

// --- sandbox adapter
export {
  E2BSandbox,
  MAX_DOWNLOAD_BYTES,
  DEFAULT_E2B_HOME_DIR,
  REAPED_MESSAGE,
  CLOSED_MESSAGE,
} from './e2b-sandbox.js';
export type { E2BSandboxOptions } from './e2b-sandbox.js';
// The command output format lives in @sbx/core (every sandbox shares it); re-exported here so
// code that imported it from @sbx/e2b keeps working.
export { assembleCommandOutput, timeoutNotice } from '@sbx/core/provider-kit';
export type { CommandOutcome } from '@sbx/core';

// --- the SDK port
export { SDK_DEFAULT_COMMAND_TIMEOUT_MS } from './e2b-client.js';
export type {
  E2BClient,
  E2BRemoteSandbox,
  E2BCommands,
  E2BFiles,
  E2BCommandOptions,
  E2BCommandResult,
  E2BCreateOptions,
  E2BConnectOptions,
  E2BListOptions,
  E2BPaginator,
  E2BSandboxInfo,
  E2BSandboxState,
  E2BEntryInfo,
  E2BFileType,
  E2BWriteData,
} from './e2b-client.js';
export { SdkE2BClient } from './sdk-client.js';
export type { E2BSdkConnection } from './sdk-client.js';
export {
  isSandboxGoneError,
  isCommandTimeoutError,
  isFileNotFoundError,
  commandExitResult,
} from './e2b-errors.js';

// --- configuration, metadata, bootstrap
export {
  resolveE2BSettings,
  reservationMaxAgeMs,
  E2B_CONFIG_KEYS,
  DEFAULT_E2B_TEMPLATE,
  DEFAULT_E2B_IDLE_TIMEOUT_SECONDS,
  DEFAULT_E2B_REPLICAS,
  MAX_E2B_TIMEOUT_SECONDS,
  MIN_CAPACITY_RESERVATION_SECONDS,
} from './e2b-config.js';
export type { E2BSettings, ReconciliationSettings } from './e2b-config.js';
export { E2B_TAGS, E2B_PROVIDER_TAG_VALUE, buildVmMetadata } from './metadata.js';
export { bootstrapScript, BOOTSTRAP_MARKER } from './bootstrap.js';

// --- uploads, output mirroring, skill sync
export {
  UploadPass,
  UploadRejectedError,
  uploadTree,
  DEFAULT_UPLOAD_LIMITS,
  MAX_MOUNT_FILE_SIZE,
  MAX_MOUNT_FILES,
  MAX_MOUNT_TOTAL_SIZE,
  MAX_MOUNT_PASS_FILES,
  MAX_MOUNT_PASS_TOTAL_BYTES,
  MOUNT_PASS_DEADLINE_SECONDS,
} from './tree-upload.js';
export type { UploadLimits, UploadTreeOptions } from './tree-upload.js';
export {
  syncOutputs,
  mtimeToNs,
  OUTPUT_SYNC_MANIFEST,
  MAX_SYNC_FILES,
  MAX_SYNC_TOTAL_BYTES,
  SYNC_DEADLINE_SECONDS,
} from './output-sync.js';
export type { OutputManifest, ManifestEntry, OutputSyncResult } from './output-sync.js';
export {
  assertSafeSkillsRoot,
  SKILLS_SIGNATURE_FILE,
  LEGACY_SIGNATURE_FILES,
  SYSTEM_TREES,
} from './skill-sync.js';

/** `use: "@sbx/e2b"` loads this: the provider class. */
export default E2BSandboxProvider;
export { validateConfigBlock } from './e2b-config.js';
