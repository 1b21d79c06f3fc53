import path from 'node:path';
import {
  errorMessage,
  parseSandboxConfig,
  type ConfigBlockValidator,
  type ConfigIssue,
  type ModuleImporter,
  type SandboxConfig,
} from '@sbx/core';
import {
  PROVIDER_BLOCK_PACKAGES,
  parseConfigYaml,
  parseProviderSpecifier,
  readConfigFile,
} from '@sbx/core/internal';
import { parseAuthorizationConfig, parseAuthorizationConfigYaml } from '@sbx/authz';
import { writeLine } from './cli-io.js';
import { configWithoutRefusedKeys } from './config-without-refused-keys.js';
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

/** Adds `found` to `issues`, leaving out what is there already (two checks of one key). */
function addIssues(issues: ConfigIssue[], found: readonly ConfigIssue[]): void {
  const seen = new Set(issues.map((i) => `${i.path}\0${i.message}`));
  for (const issue of found) {
    const key = `${issue.path}\0${issue.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push(issue);
  }
}

/** The issues of an `authorization` section as @sbx/authz reads it (whole-section ones too). */
function authorizationIssues(read: () => unknown): ConfigIssue[] {
  try {
    read();
    return [];
  } catch (err) {
    const found = configIssuesOf(err);
    if (!found) throw err;
    return [...found];
  }
}

/**
 * Validates a config file the way every sbx host loads it (core's `loadSandboxConfig`), every
 * provider block through its own package, and its `authorization` block the way @sbx/authz reads
 * it, in one pass: when core refuses keys, the rest is still checked on the configuration the file
 * gives without them (`configWithoutRefusedKeys`), so one run lists every issue. `sbx doctor` reads
 * a config file through this too, so the two always agree.
 */
export async function validateConfigFile(
  file: string,
  runtime: CommandRuntime,
): Promise<ConfigValidation> {
  const { io } = runtime;
  const absolute = path.resolve(io.cwd, file);
  const options = { env: io.env, cwd: path.dirname(absolute) };
  const issues: ConfigIssue[] = [];
  const warnings: string[] = [];
  let text: string | undefined;
  let document: unknown;
  let config: SandboxConfig | undefined;
  try {
    text = await readConfigFile(absolute, absolute);
    document = parseConfigYaml(text, undefined);
    config = parseSandboxConfig(document, options);
  } catch (err) {
    const found = configIssuesOf(err);
    if (!found) throw err;
    addIssues(issues, found);
    if (document !== undefined) config = configWithoutRefusedKeys(document, found, options);
  }
  if (config !== undefined) {
    const blocks = await providerBlockIssues(config, io.env, runtime.importer ?? nativeImport);
    addIssues(issues, blocks.issues);
    warnings.push(...blocks.warnings);
    if (config.authorization !== undefined) {
      const section = config.authorization;
      addIssues(
        issues,
        authorizationIssues(() => parseAuthorizationConfig(section)),
      );
    }
  } else if (document !== undefined && text !== undefined) {
    // Refused as a whole (not a mapping, ...): what @sbx/authz makes of the file is still news,
    // except problems of the document as a whole, which core has named.
    const source = text;
    const found = authorizationIssues(() => parseAuthorizationConfigYaml(source));
    addIssues(
      issues,
      found.filter((issue) => issue.path !== ''),
    );
  }
  return {
    file: absolute,
    valid: issues.length === 0,
    issues,
    provider: issues.length === 0 ? config?.use : undefined,
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
