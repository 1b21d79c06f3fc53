export { createSbxTools } from './create-sbx-tools.js';
export type { CreateSbxToolsOptions, SbxToolOutcome } from './create-sbx-tools.js';
