// @sbx/core/provider-kit: the lifecycle pieces a provider is built from. Public for provider
// authors (the sbx providers use exactly these): the ownership client, one periodic task for every
// timer, the per-id sandbox book and the reconciliation verdicts. Host applications need none of it.

export { OwnershipClient, describeLease } from './provider-kit/ownership-client.js';
export type {
  ClaimOutcome,
  LeasePeek,
  OwnershipClientOptions,
} from './provider-kit/ownership-client.js';
export { OwnershipLink } from './provider-kit/ownership-link.js';
export type { OwnershipLinkOptions } from './provider-kit/ownership-link.js';
export { PeriodicTask } from './provider-kit/periodic-task.js';
export { SingleFlight } from './async/single-flight.js';
export type { PeriodicTaskOptions } from './provider-kit/periodic-task.js';
export { SandboxBook } from './provider-kit/sandbox-book.js';
export type { SandboxBookOptions, SandboxBookState } from './provider-kit/sandbox-book.js';
export { ageVerdict, leaseGraceVerdict } from './reconciliation/grace-verdicts.js';
export type {
  AgeVerdict,
  LeaseGraceInput,
  LeaseGraceVerdict,
} from './reconciliation/grace-verdicts.js';
export { Sightings } from './reconciliation/sightings.js';
export { RegistrySandboxProvider } from './provider-kit/registry-provider.js';
export { RemoteShellSandbox } from './provider-kit/remote-shell-sandbox.js';
export type { RegistryProviderOptions } from './provider-kit/registry-provider.js';
