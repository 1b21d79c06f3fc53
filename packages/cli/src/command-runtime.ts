import { type ModuleImporter } from '@sbx/core';
import { DEFAULT_USER_ID } from '@sbx/core/internal';
import type { CliConfigOptions } from './cli-config.js';
import type { CliIo } from './cli-io.js';
import type { CommonOptions } from './command-result.js';

/** Thread of `exec`, `tool` and `ls` when `--thread` is not given. */
export const DEFAULT_CLI_THREAD_ID = 'cli';

/** What a command runs with besides its own options. */
export interface CommandRuntime {
  readonly io: CliIo;
  /** Aborted on SIGINT/SIGTERM by the `sbx` executable. */
  readonly signal?: AbortSignal | undefined;
  /** How provider packages are imported (`loadProviderClass`); tests and bundlers replace it. */
  readonly importer?: ModuleImporter | undefined;
}

/** Options of the commands that open a provider. */
export interface ProviderCommandOptions extends CommonOptions, CliConfigOptions {
  verbose?: boolean;
}

/** Options of the commands that work in one user's thread sandbox. */
export interface ThreadCommandOptions extends ProviderCommandOptions {
  user?: string;
  thread?: string;
}

export function identityOf(options: ThreadCommandOptions): { userId: string; threadId: string } {
  return {
    userId: options.user ?? DEFAULT_USER_ID,
    threadId: options.thread ?? DEFAULT_CLI_THREAD_ID,
  };
}
