import { collectConfigIssues } from '@sbx/core/internal';
import type { ConfigBlockValidator } from '@sbx/core';
import { resolveProvisionerSettings } from './provisioner-settings.js';

/**
 * `sbx config validate` for `sandbox.provisioner`: unknown keys (with did-you-mean) and bad
 * values, as `sbx provisioner` would refuse them at start-up. The environment is left out: it
 * is the provisioner's, not the validating shell's.
 */
export const validateConfigBlock: ConfigBlockValidator = (config) =>
  collectConfigIssues(() => resolveProvisionerSettings({ file: config.provisioner ?? {} }));
