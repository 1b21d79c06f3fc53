export { createSbxTools } from './create-sbx-tools.js';
export type {
  CreateSbxToolsOptions,
  SbxToolOutcome,
  SbxToolOutputEvent,
} from './create-sbx-tools.js';
export { SbxSandboxClient } from './sbx-sandbox-client.js';
export type { SbxSandboxClientInit, SbxSandboxClientOptions } from './sbx-sandbox-client.js';
export { MAX_PATCH_CHARS, SBX_WORKSPACE_ROOT, SbxSandboxSession } from './sbx-sandbox-session.js';
export type { SbxSandboxSessionState } from './sbx-sandbox-session.js';
export { MAX_RUN_THREADS } from '@sbx/core';
export type { RunIdentity } from '@sbx/core';
