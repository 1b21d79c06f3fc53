import type { Logger } from '@sbx/core';
import type { AuthorizationConfig } from './authorization-config.js';
import { isAuthorizationDecision } from './authorization-provider.js';
import type { AuthorizationProvider } from './authorization-provider.js';
import { readAuthorizationConfig } from './config-source.js';
import type { AuthorizationConfigSource } from './config-source.js';
import { withDefaultRole } from './principal.js';
import type { Principal } from './principal.js';
import { resolveAuthorizationProvider } from './provider-loader.js';
import type { ModuleImporter } from './provider-loader.js';
import { describeError, requiredWarningsLogger } from './required-warnings-logger.js';

/** Anything with a tool name: a name itself, or a tool definition (`{ name, ... }`). */
export type NamedTool = string | { readonly name: string };

export interface ToolFilterOptions {
  config: AuthorizationConfigSource;
  /**
   * A provider instance to reuse (e.g. the one built for this agent run). Without it the provider is
   * resolved from `config`, and only when authorization is enabled.
   */
  provider?: AuthorizationProvider;
  importer?: ModuleImporter;
  /** Default: silent except the warnings this filter must emit. */
  logger?: Logger;
}

export const TOOL_RESOURCE = 'tool';
export const TOOL_CALL_ACTION = 'call';

function nameOf(tool: NamedTool): string {
  return typeof tool === 'string' ? tool : tool.name;
}

async function allowedNames(
  provider: AuthorizationProvider,
  principal: Principal,
  names: readonly string[],
): Promise<unknown> {
  if (provider.filterResources) {
    return provider.filterResources(principal, TOOL_RESOURCE, [...names]);
  }
  const out: string[] = [];
  for (const name of names) {
    const decision: unknown = await provider.authorize(principal, TOOL_RESOURCE, TOOL_CALL_ACTION, {
      target: name,
    });
    if (!isAuthorizationDecision(decision)) {
      throw new Error(`authorization provider returned a malformed decision for tool '${name}'`);
    }
    if (decision.allowed) out.push(name);
  }
  return out;
}

function isStringList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}

/**
 * The tools `principal` may see (Layer 1: what the model is offered at all), in their original
 * order. Uses the same RBAC config as the sandbox gate (`roles.<role>.tools`).
 *
 * - No config or `enabled` not `true` → the tools unchanged (no provider is resolved).
 * - The provider cannot be resolved, throws, or returns something that is not a list of names →
 *   `fail_closed: true` gives `[]`, `fail_closed: false` gives the tools unchanged; both warn.
 * - The provider can only remove tools: names it returns that are not in `tools` are ignored.
 *
 * Never mutates `tools`; always returns a new array.
 */
export async function filterToolsForPrincipal<T extends NamedTool>(
  principal: Principal,
  tools: readonly T[],
  options: ToolFilterOptions,
): Promise<T[]> {
  const logger = options.logger ?? requiredWarningsLogger;
  let config: AuthorizationConfig | null | undefined;
  try {
    config = await readAuthorizationConfig(options.config);
  } catch (err) {
    logger.warn('Authorization config could not be read; offering no tools', {
      error: describeError(err),
    });
    return [];
  }
  if (!config || config.enabled !== true) return [...tools];
  const failClosed = config.failClosed !== false;

  const fail = (stage: string, err: unknown): T[] => {
    logger.warn(
      failClosed
        ? 'Tool authorization failed; offering no tools (fail_closed)'
        : 'Tool authorization failed; offering all tools (fail_closed is false)',
      { stage, error: describeError(err) },
    );
    return failClosed ? [] : [...tools];
  };

  let provider: AuthorizationProvider | undefined = options.provider;
  if (!provider) {
    try {
      provider = await resolveAuthorizationProvider(
        config,
        options.importer ? { importer: options.importer } : {},
      );
      if (!provider) throw new Error('no authorization provider was resolved');
    } catch (err) {
      return fail('resolve', err);
    }
  }

  const effective = withDefaultRole(principal, config.defaultRole);
  let result: unknown;
  try {
    result = await allowedNames(provider, effective, tools.map(nameOf));
    if (!isStringList(result)) {
      throw new Error('authorization provider returned a non-list result from filterResources');
    }
  } catch (err) {
    return fail('authorize', err);
  }
  const allowed = new Set(result);
  return tools.filter((tool) => allowed.has(nameOf(tool)));
}
