// Test doubles of @sbx/e2b (not a published entry point): the in-memory E2B control plane, the
// local VM it runs commands in, and the local stand-in server for the real SDK.
export { FakeE2BClient } from './testing/fake-e2b-client.js';
export { fakeErrors, sdkError } from './testing/fake-e2b-errors.js';
export type {
  FakeE2BOp,
  FakeE2BClientOptions,
  FakeVmRecord,
  FakeCall,
} from './testing/fake-e2b-client.js';
export { LocalVm } from './testing/local-vm.js';
export type { LocalVmRunOptions, LocalVmRunResult } from './testing/local-vm.js';
export { E2BStandinServer } from './testing/e2b-standin-server.js';
export type {
  E2BStandinServerOptions,
  StandinKillHold,
  StandinVm,
  StandinRequest,
} from './testing/e2b-standin-server.js';
