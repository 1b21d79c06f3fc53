export { createSbxTools, SbxToolError } from './create-sbx-tools.js';
export type { CreateSbxToolsOptions } from './create-sbx-tools.js';
export { SbxDeepAgentsBackend } from './deepagents-backend.js';
export { MAX_RUN_THREADS } from '@sbx/core';
export { SBX_TOOL_OUTPUT_EVENT } from './tool-output-events.js';
export type { SbxToolOutputEvent } from './tool-output-events.js';
export type { RunIdentity } from '@sbx/core';
export type { SbxDeepAgentsBackendOptions } from './deepagents-backend.js';
export { MAX_TRANSFER_BYTES, MAX_TRANSFER_FILES } from './deepagents-transfer.js';
