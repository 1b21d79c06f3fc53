// @sbx/core/internal: helpers the sbx packages share with each other. Not a public API: names
// here may change in any release. Host applications and third-party providers use the root
// entry (`@sbx/core`) and `@sbx/core/testing`.

export { interopDefault } from './modules/optional-dependency.js';
export { DEFAULT_SKILLS_ROOT, RESERVED_CONTAINER_PATHS } from './paths/virtual-paths.js';
export {
  HOST_SYSTEM_TREES,
  MAX_TIMER_SECONDS,
  hostDataDirProblem,
} from './config/config-schema.js';
export { REFERENCE_FLAT_PROVIDER_KEYS } from './config/config-input.js';
export { readConfigFile } from './config/config-file.js';
export { parseConfigYaml } from './config/config-yaml.js';
export {
  PROVIDER_BLOCK_PACKAGES,
  closestKey,
  collectConfigIssues,
  unknownKeyIssues,
} from './config/config-block.js';
export { DEFAULT_USER_ID } from './identity/identity.js';
export {
  LARK_CLI_CONFIG_MOUNT_PATH,
  LARK_CLI_DATA_MOUNT_PATH,
  LARK_CLI_LOCKS_MOUNT_PATH,
  LARK_CLI_RUNTIME_MOUNT_PATH,
  PROVISIONER_MAX_EXTRA_MOUNTS,
  PROVISIONER_THREAD_ID_PATTERN,
  PROVISIONER_USER_ID_PATTERN,
  SKILL_MOUNT_CATEGORIES,
  skillCategoryMountPaths,
} from './contract/provisioner-contract.js';
export { parseProviderSpecifier, providerSpecifierProblem } from './modules/provider-specifier.js';
export { SBX_CONFIG_PATH_ENV } from './provider-kit/default-provider.js';
export {
  leaseTtlMilliseconds,
  assertLeaseSandboxId,
  assertLeaseOwnerId,
} from './ownership/ownership-store.js';
export { OWNERSHIP_REDIS_PACKAGE } from './stores/ownership-store-factory.js';
export {
  CAPACITY_SANDBOX_PREFIX,
  assertCapacityHardLimit,
  assertCapacityInventory,
  assertCapacityToken,
  assertCapacitySandboxId,
} from './capacity/capacity-store.js';
export { shouldIgnorePath } from './search/search-ignore.js';
export { countLiteralOccurrences } from './tools/literal-occurrences.js';
export {
  DEFAULT_GLOB_MAX_RESULTS,
  DEFAULT_GREP_MAX_RESULTS,
  DEFAULT_SEARCH_TIMEOUT_MS,
  MAX_GREP_LINE_LENGTH,
} from './search/search-limits.js';
export { MAX_GLOB_PATTERN_LENGTH, globNameFilter } from './search/glob-match.js';
export { truncateLine } from './search/grep-line-summary.js';
export { compileGrepPattern } from './search/grep-pattern.js';
export {
  VIRTUAL_PATH_PREFIX,
  VIRTUAL_WORKSPACE_PATH,
  VIRTUAL_UPLOADS_PATH,
  VIRTUAL_OUTPUTS_PATH,
  VIRTUAL_ACP_WORKSPACE_PATH,
  SKILL_CATEGORIES,
  isUnderVirtualPrefix,
  normalizeVirtualRoot,
  hasTraversalSegment,
} from './paths/virtual-paths.js';
export { sharedSkillsViewPath } from './paths/virtual-paths-layout.js';
export { PATH_TRAVERSAL_MESSAGE } from './paths/path-mapping.js';
export { assertPathArgument } from './paths/path-limits.js';
export { ensureDirectoryConfined, openConfined } from './host/host-confinement.js';
export { TOOL_NAMES, isToolName, MAX_PATTERN_LENGTH } from './tools/tool-schemas.js';
export { describingToolSchema } from './tools/tool-standard-schema.js';
export { workspaceCommand } from './tools/bash-tool.js';
export type { WorkspaceCommand } from './tools/bash-tool.js';
export { resolveToolConfig } from './tools/tool-config.js';
export {
  recordFileContent,
  refreshFileMark,
  normalizeToolPath,
} from './tools/read-before-write.js';
export { maskHostPaths, guardFileToolPath } from './tools/local-sandbox-guard.js';
export { DEFAULT_SPEC_POLICY, NO_SPEC_SUPPORT, checkSandboxSpec } from './contract/sandbox-spec.js';
export { specPolicyWithin } from './contract/sandbox-spec-bounds.js';
export type { SpecBaseline } from './contract/sandbox-spec-bounds.js';
export { assembleCommandOutput, formatSeconds, timeoutNotice } from './command/command-output.js';
export { SandboxProviderEventEmitter } from './contract/provider-events.js';
export { ProcessTable } from './process/process-table.js';
export type { ProcessTableOptions } from './process/process-table.js';
export type {
  InputWriteOptions,
  LaunchOptions,
  LaunchedExit,
  LaunchedProcess,
  ProcessLauncher,
  ProcessSink,
} from './process/process-launcher.js';
export { Utf8Listener } from './process/utf8-listener.js';
export { StreamRewriter } from './process/stream-rewriter.js';
export { OutputPacer, sharedOutputPacer } from './process/output-pacer.js';
export type { OutputPacerOptions, PacedStream } from './process/output-pacer.js';
export { decodeInTurns, rewriteInTurns } from './process/text-in-turns.js';
export { execResultText } from './contract/exec-result-text.js';
export { assertCommandText, assertExecSupported } from './process/process-limits.js';
