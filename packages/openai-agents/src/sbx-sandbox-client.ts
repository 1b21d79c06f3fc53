import {
  InvalidArgumentError,
  assertValidThreadIdentity,
  loadOptionalDependency,
  type ToolRunnerOptions,
} from '@sbx/core';
import type * as Agents from '@openai/agents';
import type * as AgentsSandbox from '@openai/agents/sandbox';
import type { Manifest, SandboxClient, SandboxClientCreateArgs } from '@openai/agents/sandbox';
import {
  SBX_WORKSPACE_ROOT,
  SbxSandboxSession,
  type SbxExecOutputEvent,
  type SbxSandboxSessionState,
} from './sbx-sandbox-session.js';
import { ThreadRunners } from '@sbx/core';

/** Per-run client options (`run(agent, input, { sandbox: { client, options } })`). */
export interface SbxSandboxClientOptions extends Record<string, unknown> {
  /** The thread this run's sandbox belongs to; default the client's. */
  threadId?: string;
  /** The user; default the client's. */
  userId?: string;
}

/**
 * The client's options: a new tool context (`provider`, `threadId`, `userId`, `config`,
 * `authorize`, `leaseManager`, ...) or an existing `context`, as `createSbxTools` takes, plus
 * `onExecOutput`.
 */
export type SbxSandboxClientInit = ToolRunnerOptions & {
  /**
   * Receives `exec_command`'s output while the command runs, a line at a time, masked, redacted
   * and bounded as the result is, all before the call returns: the SDK has no stream event for a
   * sandbox command's progress, so a host forwards these to its own stream. It must not block;
   * one that throws is logged once and gets nothing more for that call.
   */
  onExecOutput?: (event: SbxExecOutputEvent) => void;
};

/**
 * An OpenAI Agents SDK `SandboxClient` backed by any sbx provider, for `SandboxAgent`:
 *
 *     const client = new SbxSandboxClient({ provider, userId: 'alice', threadId: 't1' });
 *     await run(agent, input, { sandbox: { client } });
 *
 * Each session is one thread's sandbox (the run's `options.threadId`, else the client's), its
 * workspace the manifest root `/mnt/user-data/workspace`. The shell and filesystem capabilities
 * run sbx's tools (`write_stdin` with the process tools on, over pipes). Manifest entries,
 * snapshots, a terminal (`tty`), exposed ports and resuming a session in another process are not
 * supported (refused with the SDK's errors, not ignored); a workspace persists and hydrates as an
 * sbx checkpoint on host-directory providers only.
 */
export class SbxSandboxClient implements SandboxClient<
  SbxSandboxClientOptions,
  SbxSandboxSessionState
> {
  readonly backendId = 'sbx';
  readonly #runners: ThreadRunners;
  readonly #onExecOutput: ((event: SbxExecOutputEvent) => void) | undefined;

  constructor(options: SbxSandboxClientInit) {
    const { onExecOutput, ...runnerOptions } = options;
    this.#runners = new ThreadRunners(runnerOptions);
    this.#onExecOutput = onExecOutput;
  }

  async create(
    args?: SandboxClientCreateArgs<SbxSandboxClientOptions> | Manifest,
    manifestOptions?: SbxSandboxClientOptions,
  ): Promise<SbxSandboxSession> {
    const [sandboxModule, agents] = await Promise.all([
      loadOptionalDependency<typeof AgentsSandbox>('@openai/agents/sandbox', '@sbx/openai-agents'),
      loadOptionalDependency<typeof Agents>('@openai/agents', '@sbx/openai-agents'),
    ]);
    const normalized = sandboxModule.normalizeSandboxClientCreateArgs(args, manifestOptions);
    if (normalized.snapshot !== undefined && normalized.snapshot !== null) {
      throw new InvalidArgumentError('SbxSandboxClient: snapshots are not supported');
    }
    const given = normalized.manifest;
    if (Object.keys(given.entries).length > 0) {
      throw new InvalidArgumentError(
        'SbxSandboxClient: manifest entries are not supported; write files with the tools',
      );
    }
    if (Object.keys(given.environment ?? {}).length > 0) {
      throw new InvalidArgumentError(
        'SbxSandboxClient: manifest environment is not supported; use the tool context env',
      );
    }
    const options = normalized.options ?? {};
    const runner = this.#runners.for({
      threadId: typeof options.threadId === 'string' ? options.threadId : undefined,
      userId: typeof options.userId === 'string' ? options.userId : undefined,
    });
    const { threadId, userId } = runner.context;
    if (threadId === undefined) {
      throw new InvalidArgumentError('SbxSandboxClient: no thread (give threadId)');
    }
    assertValidThreadIdentity({ threadId, userId });
    const manifest = new sandboxModule.Manifest({ root: SBX_WORKSPACE_ROOT });
    const state: SbxSandboxSessionState = {
      manifest,
      threadId,
      ...(userId !== undefined ? { userId } : {}),
      workspaceReady: true,
    };
    return new SbxSandboxSession(state, runner, {
      applyDiff: agents.applyDiff,
      errors: sandboxModule,
      onExecOutput: this.#onExecOutput,
    });
  }
}
