export { createSbxTools } from './create-sbx-tools.js';
export type {
  CreateSbxToolsOptions,
  SbxTool,
  SbxToolInput,
  SbxToolSet,
} from './create-sbx-tools.js';
export { SbxToolError } from './sbx-tool-error.js';
