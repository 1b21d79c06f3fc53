export { createSbxTools } from './create-sbx-tools.js';
export type {
  CreateSbxToolsOptions,
  DefaultSbxToolName,
  SbxTool,
  SbxToolInput,
  SbxToolSet,
} from './create-sbx-tools.js';
export { sbxToolsContext } from './sbx-run-context.js';
export type { SbxRunContext } from './sbx-run-context.js';
export { SbxToolError } from './sbx-tool-error.js';
export { MAX_RUN_THREADS } from '@sbx/core';
