export { createSbxTools } from './create-sbx-tools.js';
export type { CreateSbxToolsOptions, SbxToolOutcome } from './create-sbx-tools.js';
export { MAX_RUN_THREADS } from './thread-runners.js';
export type { RunIdentity } from './thread-runners.js';
