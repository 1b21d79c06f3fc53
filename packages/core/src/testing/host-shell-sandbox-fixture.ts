import {
  FULL_PROCESS_CAPABILITIES,
  type ExecOptions,
  type ExecResult,
  type SandboxCapabilities,
} from '../contract/sandbox-exec.js';
import { execViaLauncher } from '../process/launcher-exec.js';
import type { ProcessLauncher } from '../process/process-launcher.js';
import { ProcessTable } from '../process/process-table.js';
import { startOnHost } from './host-shell.js';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp } from 'node:fs/promises';
import path from 'node:path';
import { ManualClock } from './manual-clock.js';
import { MemorySandbox } from './memory-sandbox.js';
import { MemorySandboxProvider } from './memory-sandbox-provider.js';
import { createToolContext } from '../tools/create-tool-context.js';
import type { ToolContext } from '../tools/tool-context.js';

/**
 * A sandbox whose commands run for real in a host shell (a stand-in VM: `/mnt/user-data` lives
 * below `boxDir`), through core's own `execViaLauncher` and `ProcessTable`, so output streams the
 * way a provider built on the kit streams it.
 */
export class HostShellSandbox extends MemorySandbox {
  readonly #launcher: ProcessLauncher;
  readonly #table: ProcessTable;

  constructor(id: string, boxDir: string, clock: ManualClock) {
    super(id);
    this.#launcher = {
      async launch(command, options, sink) {
        const started = startOnHost({
          boxDir,
          mapped: ['/mnt/user-data'],
          command: 'sh',
          args: ['-c', command],
          env: options.env ?? {},
          onStdout: sink.stdout,
          onStderr: sink.stderr,
        });
        return {
          exited: started.exited.then((exit) => ({
            exitCode: exit.exitCode,
            ...(exit.signal ? { signal: exit.signal } : {}),
          })),
          kill: async (signal) => started.kill(signal),
        };
      },
    };
    this.#table = new ProcessTable({ launcher: this.#launcher, clock, stdin: false });
  }

  override get capabilities(): SandboxCapabilities {
    return FULL_PROCESS_CAPABILITIES;
  }

  override get processes(): ProcessTable {
    return this.#table;
  }

  override exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    return execViaLauncher(this.#launcher, command, options, { timeoutMs: options.timeoutMs });
  }

  override async close(): Promise<void> {
    await this.#table.close();
  }
}

/** A thread of user `alice` on a `HostShellSandbox` in a fresh box below `base`. */
export interface HostShellThread {
  readonly context: ToolContext;
  readonly provider: MemorySandboxProvider;
  readonly sandbox: HostShellSandbox;
  /** The processes' clock: yield and wait times pass only when the test advances it. */
  readonly clock: ManualClock;
  /**
   * A FIFO in the box, the tests' gate: a command reading it blocks until the test writes a line
   * to it (`writeFile(fifo, 'go\n')`), with no sleep on either side.
   */
  readonly fifo: string;
}

export async function hostShellThread(
  base: string,
  config: ToolContext['config'] = {},
): Promise<HostShellThread> {
  const boxDir = await mkdtemp(path.join(base, 'box-'));
  await mkdir(path.join(boxDir, 'mnt', 'user-data', 'workspace'), { recursive: true });
  const fifo = path.join(boxDir, 'gate');
  const made = spawnSync('mkfifo', [fifo]);
  if (made.status !== 0) throw new Error(`mkfifo failed: ${String(made.stderr)}`);
  const clock = new ManualClock();
  const provider = new MemorySandboxProvider();
  const id = provider.idFor({ userId: 'alice', threadId: 't1' });
  const sandbox = new HostShellSandbox(id, boxDir, clock);
  provider.sandboxes.set(id, sandbox);
  const context = createToolContext({ provider, userId: 'alice', threadId: 't1', config });
  return { context, provider, sandbox, clock, fifo };
}
