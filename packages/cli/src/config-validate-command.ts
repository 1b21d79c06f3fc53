import { readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  errorMessage,
  loadSandboxConfig,
  type ConfigBlockValidator,
  type ConfigIssue,
  type ModuleImporter,
  type SandboxConfig,
} from '@sbx/core';
import { PROVIDER_BLOCK_PACKAGES, parseProviderSpecifier } from '@sbx/core/internal';
import { parseAuthorizationConfig, parseAuthorizationConfigYaml } from '@sbx/authz';
import { writeLine } from './cli-io.js';
import {
  configIssuesOf,
  exitCodeFor,
  printJson,
  reportFailure,
  type CommonOptions,
} from './command-result.js';
import type { CommandRuntime } from './command-runtime.js';
import { ExitCode } from './exit-codes.js';

export interface ConfigValidation {
  readonly file: string;
  readonly valid: boolean;
  /** Every problem, each at its key path as written in the file (snake_case). */
  readonly issues: readonly ConfigIssue[];
  /** The provider the file selects, when it is valid. */
  readonly provider: string | undefined;
  /** Blocks that could not be checked (their package is not installed, or has no validator). */
  readonly warnings?: readonly string[];
}

const nativeImport: ModuleImporter = (specifier) => import(specifier);

/**
 * The provider blocks the file has, each with the package whose `validateConfigBlock` checks it:
 * the six sbx providers' blocks, and `provider_options` for the package `use` names.
 */
function blocksToCheck(config: SandboxConfig): { block: string; packageName: string }[] {
  const present: { block: string; packageName: string }[] = [];
  const record = config as unknown as Record<string, unknown>;
  for (const [block, packageName] of Object.entries(PROVIDER_BLOCK_PACKAGES)) {
    if (record[block] !== undefined) present.push({ block, packageName });
  }
  const spec = parseProviderSpecifier(config.use);
  if (record.providerOptions !== undefined && spec) {
    present.push({ block: 'provider_options', packageName: spec.packageName });
  }
  return present;
}

/**
 * Every provider block through its own package's validator (unknown keys with did-you-mean, bad
 * values), as the top level is checked through core's schema. A block whose package is not
 * installed cannot be checked: that is a warning, not an issue.
 */
async function providerBlockIssues(
  config: SandboxConfig,
  env: Readonly<Record<string, string | undefined>>,
  importer: ModuleImporter,
): Promise<{ issues: ConfigIssue[]; warnings: string[] }> {
  const issues: ConfigIssue[] = [];
  const warnings: string[] = [];
  for (const { block, packageName } of blocksToCheck(config)) {
    let validate: ConfigBlockValidator | undefined;
    try {
      const mod = (await importer(packageName)) as { validateConfigBlock?: unknown };
      if (typeof mod.validateConfigBlock === 'function') {
        validate = mod.validateConfigBlock as ConfigBlockValidator;
      }
    } catch (err) {
      warnings.push(
        `sandbox.${block} not checked: ${packageName} could not be loaded (${errorMessage(err)})`,
      );
      continue;
    }
    if (!validate) {
      warnings.push(`sandbox.${block} not checked: ${packageName} exports no validateConfigBlock`);
      continue;
    }
    issues.push(...validate(config, env));
  }
  return { issues, warnings };
}

/**
 * The issues of a top-level `authorization:` section, read straight from the file. Used when core
 * rejected the file, so one run shows the problems of both sections. Problems of the document as a
 * whole (unreadable, not YAML) are core's to report.
 */
async function authorizationIssuesOf(file: string): Promise<ConfigIssue[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    // Core has already reported why the file cannot be read.
    return [];
  }
  try {
    parseAuthorizationConfigYaml(text);
    return [];
  } catch (err) {
    const issues = configIssuesOf(err);
    if (!issues) throw err;
    return issues.filter((issue) => issue.path !== '');
  }
}

/**
 * Validates a config file the way every sbx host loads it (core's `loadSandboxConfig`), plus its
 * `authorization` block the way @sbx/authz reads it, and collects the issues of both.
 */
export async function validateConfigFile(
  file: string,
  runtime: CommandRuntime,
): Promise<ConfigValidation> {
  const { io } = runtime;
  const absolute = path.resolve(io.cwd, file);
  const issues: ConfigIssue[] = [];
  const warnings: string[] = [];
  let provider: string | undefined;
  try {
    const config = await loadSandboxConfig(
      { path: absolute },
      { env: io.env, cwd: path.dirname(absolute) },
    );
    provider = config.use;
    const blocks = await providerBlockIssues(config, io.env, runtime.importer ?? nativeImport);
    issues.push(...blocks.issues);
    warnings.push(...blocks.warnings);
    if (config.authorization !== undefined) {
      try {
        parseAuthorizationConfig(config.authorization);
      } catch (err) {
        const found = configIssuesOf(err);
        if (!found) throw err;
        issues.push(...found);
      }
    }
  } catch (err) {
    const found = configIssuesOf(err);
    if (!found) throw err;
    issues.push(...found);
    const seen = new Set(found.map((i) => `${i.path}\0${i.message}`));
    for (const issue of await authorizationIssuesOf(absolute)) {
      if (!seen.has(`${issue.path}\0${issue.message}`)) issues.push(issue);
    }
  }
  return {
    file: absolute,
    valid: issues.length === 0,
    issues,
    provider: issues.length === 0 ? provider : undefined,
    ...(warnings.length > 0 ? { warnings } : {}),
  };
}

/** `sbx config validate <file>`: exit 0 when valid, 1 with every issue listed when not. */
export async function configValidateCommand(
  file: string,
  options: CommonOptions,
  runtime: CommandRuntime,
): Promise<number> {
  const { io } = runtime;
  try {
    const result = await validateConfigFile(file, runtime);
    if (!options.json) {
      for (const warning of result.warnings ?? []) writeLine(io.stderr, `sbx: warning: ${warning}`);
    }
    if (options.json) {
      printJson(io, { ok: result.valid, ...result });
    } else if (result.valid) {
      writeLine(io.stdout, `${result.file}: valid (provider ${result.provider ?? '?'})`);
    } else {
      writeLine(io.stdout, `${result.file}: invalid`);
      for (const issue of result.issues) {
        writeLine(io.stdout, `  ${issue.path || '<root>'}: ${issue.message}`);
      }
    }
    return result.valid ? ExitCode.OK : ExitCode.FAILURE;
  } catch (err) {
    reportFailure(io, options, err);
    return exitCodeFor(err);
  }
}
