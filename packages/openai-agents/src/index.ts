export { createSbxTools } from './create-sbx-tools.js';
export type {
  CreateSbxToolsOptions,
  SbxToolOutcome,
  SbxToolOutputEvent,
} from './create-sbx-tools.js';
export { SbxSandboxClient } from './sbx-sandbox-client.js';
export type { SbxSandboxClientInit, SbxSandboxClientOptions } from './sbx-sandbox-client.js';
export { MAX_PATCH_CHARS, SBX_WORKSPACE_ROOT, SbxSandboxSession } from './sbx-sandbox-session.js';
export type { SbxExecOutputEvent, SbxSandboxSessionState } from './sbx-sandbox-session.js';
export { MAX_AGENT_YIELD_MS } from './exec-sessions.js';
export { MAX_VIEW_IMAGE_BYTES } from './view-image.js';
export {
  MAX_WORKSPACE_ARCHIVE_BYTES,
  MAX_WORKSPACE_EXTRACTED_BYTES,
  MAX_WORKSPACE_MEMBERS,
} from './workspace-archive.js';
export { MAX_RUN_THREADS } from '@sbx/core';
export type { RunIdentity } from '@sbx/core';
