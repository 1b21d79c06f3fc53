// Public API of @sbx/cli. The `sbx` executable is `dist/bin.js`; everything it does is reachable
// from here for hosts that embed it (run it in-process, serve MCP on their own transport, run the
// doctor checks in a health endpoint).

// --- running the CLI
export { runCli } from './run-cli.js';
export type { RunCliOptions } from './run-cli.js';
export { buildProgram, EXIT_STATUS_HELP } from './program.js';
export { DEFAULT_CLI_THREAD_ID } from './command-runtime.js';
export type {
  CommandRuntime,
  ProviderCommandOptions,
  ThreadCommandOptions,
} from './command-runtime.js';
export { processIo } from './cli-io.js';
export type { CliIo, CliOutput } from './cli-io.js';
export { ExitCode } from './exit-codes.js';
export type { ExitCodeValue } from './exit-codes.js';
export { CLI_VERSION } from './version.js';

// --- configuration
export { SBX_CONFIG_ENV, configFileOf, loadCliConfig } from './cli-config.js';
export type { CliConfigOptions, LoadedCliConfig } from './cli-config.js';
export { validateConfigFile } from './config-validate-command.js';
export type { ConfigValidation } from './config-validate-command.js';

// --- commands and their results
export { commandLineOf } from './exec-command.js';
export { parseCommandOutput } from './command-outcome.js';
export type { CommandOutcome } from './command-outcome.js';
export { parseToolArguments } from './tool-command.js';

// --- optional provider capabilities
export { listHostThreadSandboxes, listSandboxesOf } from './sandbox-listing.js';
// The capability contracts live in @sbx/core; re-exported for callers of the CLI's API.
export { canListSandboxes, canReapOrphans } from '@sbx/core';
export type {
  ListSandboxesOptions,
  OrphanCollectingProvider,
  OrphanReapReport,
  ReapOrphansOptions,
  SandboxListingProvider,
  SandboxSummary,
} from '@sbx/core';
export { isHostDirectoryProvider } from './host-directory-provider.js';
export type { HostDirectoryProvider } from './host-directory-provider.js';

// --- doctor
export {
  DEFAULT_AIO_IMAGE,
  OWNERSHIP_REDIS_PACKAGE,
  PROVIDER_PACKAGES,
  REDIS_URL_ENVS,
  runDoctorChecks,
} from './doctor-checks.js';
export type { CheckStatus, DoctorCheck, DoctorOptions, DoctorReport } from './doctor-checks.js';
export { renderDoctorReport } from './doctor-command.js';
export { packageFinder } from './installed-packages.js';
export type { InstalledPackage, PackageFinder } from './installed-packages.js';
export { DEFAULT_DOCKER_SOCKET, dockerEndpointFrom } from './docker-probe.js';
export type { DockerEndpoint } from './docker-probe.js';
export { pingRedis } from './redis-probe.js';
export type { RedisPing } from './redis-probe.js';

// --- MCP
export { COMMAND_OUTPUT_SCHEMA, createSbxMcpServer } from './mcp-server.js';
export type { SbxMcpServerOptions, SbxMcpSession } from './mcp-server.js';
