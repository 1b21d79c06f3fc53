// Public API of @sbx/core/testing: conformance suites and controllable fakes. Each block belongs to
// one concept; add exports under the matching marker only.

// @section require-service
export { requireService, servicesRequired, serviceAddress } from './testing/require-service.js';
export type { ServiceName, ServiceEnv } from './testing/require-service.js';

// @section fakes (manual clock, pausable wrappers)
export { disposedAfterEach } from './testing/disposed-after-each.js';
export { rejectionOf } from './testing/rejection.js';
export { MemorySandbox } from './testing/memory-sandbox.js';
export type {
  MemorySandboxOptions,
  MemorySandboxOperation,
  MemorySandboxCall,
  MemoryCommandRecord,
  MemoryCommandHandler,
} from './testing/memory-sandbox.js';
export { MemorySandboxProvider } from './testing/memory-sandbox-provider.js';
export type { MemorySandboxProviderOptions } from './testing/memory-sandbox-provider.js';
export { ManualClock } from './testing/manual-clock.js';
export { Deferred, controllable, settle, track } from './testing/deferred.js';
export { CallGate, Pausable, pausable } from './testing/pausable.js';
export type {
  PausePhase,
  PauseOptions,
  PausedCall,
  GateCallRecord,
  MethodName,
} from './testing/pausable.js';
export { FakeSandbox, FakeSandboxProvider } from './testing/fake-provider.js';
export type {
  FakeSandboxMethod,
  FakeProviderMethod,
  FakeProviderCall,
  FakeSandboxProviderOptions,
} from './testing/fake-provider.js';

// @section sandbox-contract
export { describeProcessContract } from './testing/process-contract.js';
export type {
  ProcessContractOptions,
  ProcessSandboxUnderTest,
} from './testing/process-contract.js';
export { sandboxFromProvider } from './testing/sandbox-from-provider.js';
export type { SandboxFromProviderOptions } from './testing/sandbox-from-provider.js';
export { describeSandboxContract } from './testing/sandbox-contract.js';
export type { SandboxUnderTest, SandboxContractOptions } from './testing/sandbox-contract.js';

// @section provider-contract
export { describeProviderContract } from './testing/provider-contract.js';
export type { ProviderUnderTest, ProviderContractOptions } from './testing/provider-contract.js';
export { describeLifecycleContract } from './testing/lifecycle-contract.js';
export { describeNetworkPolicyContract } from './testing/network-policy-contract.js';
export { describeInspectionContract } from './testing/inspection-contract.js';
export type {
  InspectionCapabilities,
  ListingContext,
  ListingHarness,
  ListingContractOptions,
  InspectionContext,
  InspectionHarness,
  InspectionContractOptions,
} from './testing/inspection-contract.js';
export { describeWarmPoolProviderContract } from './testing/warm-pool-provider-contract.js';
export type {
  WarmPoolProvider,
  WarmPoolContext,
  WarmPoolHarness,
  WarmPoolBackendCall,
} from './testing/warm-pool-provider-contract.js';

// @section ownership-store-contract
export { describeOwnershipStoreContract } from './testing/ownership-store-contract.js';
export type {
  OwnershipStoreHarness,
  OwnershipStoreContractOptions,
} from './testing/ownership-store-contract.js';

// @section capacity-store-contract
export { describeCapacityStoreContract } from './testing/capacity-store-contract.js';
export type { CapacityStoreHarness } from './testing/capacity-store-contract.js';

// @section host-shell
export { busyboxBin, runOnHost, startOnHost } from './testing/host-shell.js';
export type {
  HostProcess,
  HostRun,
  HostRunResult,
  HostStart,
  Userland,
} from './testing/host-shell.js';

// @section recording-logger
export { recordingLogger } from './testing/recording-logger.js';
export type { LogLevel, LogLine, RecordingLogger } from './testing/recording-logger.js';

// @section isolated-run
export { LOOP_PROBE_SCRIPT, runIsolated } from './testing/isolated-run.js';
export type { IsolatedRunOptions, IsolatedRunResult } from './testing/isolated-run.js';
