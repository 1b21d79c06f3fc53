import type { FileHandle } from 'node:fs/promises';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import {
  DEFAULT_COMMAND_TIMEOUT_SECONDS,
  HostBashDisabledError,
  HostPathMasker,
  InvalidArgumentError,
  LOCAL_HOST_BASH_DISABLED_MESSAGE,
  PathMappingTable,
  Sandbox,
  SandboxFileError,
  SandboxPermissionError,
  SandboxRuntimeError,
  buildSandboxEnv,
  findGlobMatches,
  findGrepMatches,
  listDirTree,
  redactSecrets,
  secretsForLines,
  silentLogger,
  translateContainerPaths,
  validateExtraEnv,
} from '@sbx/core';
import { ProcessTable, assertCommandText, assertExecSupported } from '@sbx/core/internal';
import { FULL_PROCESS_CAPABILITIES } from '@sbx/core';
import {
  DEFAULT_SEARCH_TIMEOUT_MS,
  MAX_TIMER_SECONDS,
  VIRTUAL_PATH_PREFIX,
  normalizeVirtualRoot,
} from '@sbx/core/internal';
import type {
  EnvPolicyMode,
  ExecOptions,
  ExecResult,
  SandboxCapabilities,
  GlobOptions,
  GlobResult,
  GrepOptions,
  GrepResult,
  ListDirOptions,
  LocalToolEnvironment,
  Logger,
  PathMapping,
  ReadFileOptions,
  ResolvedPath,
  WriteFileOptions,
} from '@sbx/core';
import { toFileError } from './file-errors.js';
import { mountsBelow, openSandboxFile, type FileAccess } from './sandbox-file-open.js';
import { runPosixCommand, type PosixRunOptions, type PosixRunResult } from './posix-runner.js';
import { runHostExec, type PreparedHostCommand } from './local-exec.js';
import { LocalProcessLauncher } from './local-process-launcher.js';
import { sharedDefaultShell, type LocalSandboxOptions } from './local-sandbox-options.js';
import {
  PROVIDER_PROCESS_MARKER,
  SANDBOX_PROCESS_MARKER,
  killMarkedProcesses,
} from './process-reaper.js';
import type { SandboxSessions } from './session-observer.js';
import { readLineRange, readWholeText } from './text-file.js';
import { shellArgs } from './shell.js';
import { confinedBaseEnv } from './confinement/confined-env.js';
import { handDirectoriesToOwner, handFileToOwner } from './confinement/file-ownership.js';
import type { SandboxConfinement } from './confinement/sandbox-confinement.js';

/** Largest file `downloadFile` returns (100 MiB). */
export const MAX_DOWNLOAD_BYTES = 100 * 1024 * 1024;

/**
 * A sandbox on the host itself: files live in host directories behind a mount table, commands run
 * in the host shell. Every path goes through the mount table (`PathMappingTable`), every output is
 * masked back to virtual paths, and injected secrets are redacted from command output.
 *
 * File operations reach only what the mount table maps (paths no mount covers are refused, unless
 * `confined: false`). With host bash on this is NOT an isolation boundary: an enabled host shell
 * can reach anything the server can.
 *
 * One concept, kept whole: the `Sandbox` contract over host directories. Each method is the
 * contract's entry and delegates the work — commands to `posix-runner` and the confinement, opening
 * files to `sandbox-file-open`, text reads and writes to `text-file`, search to core — so what
 * stays here is the order of the checks every entry makes (path, mount, confinement, masking).
 */
export class LocalSandbox extends Sandbox {
  readonly table: PathMappingTable;
  /**
   * Whether bash runs here at all (the tool layer reads it): host bash explicitly allowed, or
   * every command confined (`confined`).
   */
  readonly allowHostBash: boolean;
  /** Commands run in the thread's namespaces (bubblewrap), not on the host. */
  readonly confined: boolean;
  private readonly confinement: SandboxConfinement | undefined;
  private readonly timeoutSeconds: number;
  private readonly searchTimeoutMs: number;
  private readonly envPolicy: EnvPolicyMode;
  private readonly envAllow: readonly string[];
  private readonly processTags: { sandbox: string; provider?: string } | undefined;
  private readonly sessions: SandboxSessions | undefined;
  private commandsSinceReap = false;
  private readonly shell: string | undefined;
  private readonly maxCaptureBytes: number | undefined;
  private readonly agentWritten: Set<string>;
  private readonly logger: Logger;
  private readonly runner: (options: PosixRunOptions) => Promise<PosixRunResult>;
  private maskerPromise: Promise<HostPathMasker> | undefined;
  /** Read by the tool layer (`LocalToolEnvironmentSource`). */
  readonly localToolEnvironment: LocalToolEnvironment | undefined;
  private readonly processTable: ProcessTable;

  constructor(id: string, options: LocalSandboxOptions = {}) {
    super(id);
    if (process.platform === 'win32') {
      throw new SandboxRuntimeError(
        'LocalSandbox does not support Windows hosts yet; run sbx under WSL or use a container provider',
      );
    }
    const timeout = options.bashCommandTimeout ?? DEFAULT_COMMAND_TIMEOUT_SECONDS;
    if (!(typeof timeout === 'number' && Number.isFinite(timeout) && timeout > 0)) {
      throw new InvalidArgumentError(
        `bashCommandTimeout must be a positive number of seconds, got ${timeout}`,
      );
    }
    // A longer timer overflows: Node fires it after 1 ms, so every command would "time out".
    if (timeout > MAX_TIMER_SECONDS) {
      throw new InvalidArgumentError(
        `bashCommandTimeout must be at most ${MAX_TIMER_SECONDS} seconds, got ${timeout}`,
      );
    }
    const searchTimeout = options.searchTimeoutSeconds ?? DEFAULT_SEARCH_TIMEOUT_MS / 1000;
    if (!(
      Number.isFinite(searchTimeout) &&
      searchTimeout > 0 &&
      searchTimeout <= MAX_TIMER_SECONDS
    )) {
      throw new InvalidArgumentError(
        `searchTimeoutSeconds must be a positive number of seconds up to ${MAX_TIMER_SECONDS}, got ${searchTimeout}`,
      );
    }
    this.searchTimeoutMs = searchTimeout * 1000;
    this.envPolicy = options.envPolicy ?? 'allowlist';
    this.envAllow = options.envAllow ?? [];
    this.processTags = options.processTags;
    this.sessions = options.sessions;
    this.table = new PathMappingTable(options.mappings ?? [], {
      confined: options.confined ?? true,
    });
    this.confinement = options.confinement;
    this.confined = options.confinement !== undefined;
    this.allowHostBash = this.confined || (options.allowHostBash ?? false);
    this.timeoutSeconds = timeout;
    this.shell = options.shell;
    this.maxCaptureBytes = options.maxCaptureBytes;
    this.agentWritten = options.agentWrittenPaths ?? new Set();
    this.logger = options.logger ?? silentLogger;
    this.runner = options.runner ?? runPosixCommand;
    this.localToolEnvironment = options.toolEnvironment;
    this.processTable = new ProcessTable({
      launcher: new LocalProcessLauncher({
        prepare: (command, launch) => this.prepareCommand(command, launch),
        rewrite: (env) => this.outputRewrite(env),
        logger: this.logger,
        sandboxId: id,
      }),
      stdin: true,
      logger: this.logger,
      sandboxId: id,
    });
  }

  get mappings(): readonly PathMapping[] {
    return this.table.mappings;
  }

  /** The set of canonical host paths this sandbox wrote (shared with a successor instance). */
  get agentWrittenPaths(): Set<string> {
    return this.agentWritten;
  }

  /**
   * Kills every process a command of this sandbox started and left running: whatever is in the
   * sessions its commands started (an `env -i` or `exec env -u …` that dropped the tag
   * included), and whatever carries its environment tag (`setsid`, double forks). Best-effort:
   * see `process-reaper`.
   */
  async killProcesses(): Promise<number> {
    this.commandsSinceReap = false;
    if (this.confinement) {
      // The kernel's own bookkeeping: killing the namespace's init ends every process in it.
      const running = this.confinement.namespace.running;
      await this.confinement.namespace.kill();
      return running ? 1 : 0;
    }
    if (this.sessions) return this.sessions.reap();
    if (!this.processTags) return 0;
    return killMarkedProcesses(SANDBOX_PROCESS_MARKER, this.processTags.sandbox, this.logger);
  }

  /**
   * Whether a command ran since the last `killProcesses()`: a sandbox whose agent only used the
   * file tools left nothing running, and its release need not scan `/proc`.
   */
  get hasUnreapedCommands(): boolean {
    return this.commandsSinceReap;
  }

  /** Resolves a virtual path through the mount table (see `PathMappingTable.resolve`). */
  resolvePath(virtualPath: string, access: 'read' | 'write' = 'read'): Promise<ResolvedPath> {
    return this.table.resolve(virtualPath, access);
  }

  /** Host paths in `text` shown as virtual paths (deepest mount first). */
  async maskHostPaths(text: string): Promise<string> {
    return (await this.masker()).mask(text);
  }

  private masker(): Promise<HostPathMasker> {
    if (!this.maskerPromise) {
      const pending = this.table.resolvedRoots().then((roots) => {
        const sources = [];
        for (const mapping of this.table.mappings) {
          const canonical = roots.get(mapping) as string;
          sources.push({ hostPath: canonical, virtualPath: mapping.containerPath });
          const configured = path.resolve(mapping.hostPath);
          if (configured !== canonical) {
            sources.push({ hostPath: configured, virtualPath: mapping.containerPath });
          }
        }
        sources.sort((a, b) => b.hostPath.length - a.hostPath.length);
        return new HostPathMasker(sources, { normalizeTailSeparators: true });
      });
      pending.catch(() => {
        if (this.maskerPromise === pending) this.maskerPromise = undefined;
      });
      this.maskerPromise = pending;
    }
    return this.maskerPromise;
  }

  override get capabilities(): SandboxCapabilities {
    return FULL_PROCESS_CAPABILITIES;
  }

  override get processes(): ProcessTable {
    return this.processTable;
  }

  override async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    const timeoutMs = options.timeoutMs ?? this.timeoutSeconds * 1000;
    if (!(Number.isFinite(timeoutMs) && timeoutMs > 0 && timeoutMs <= MAX_TIMER_SECONDS * 1000)) {
      throw new InvalidArgumentError(
        `timeoutMs must be a positive number up to ${MAX_TIMER_SECONDS * 1000}, got ${timeoutMs}`,
      );
    }
    assertExecSupported(this.capabilities, options);
    const prepared = await this.prepareCommand(command, options);
    if (this.confinement) {
      const namespace = this.confinement.namespace;
      const result = await runHostExec(
        this.runner,
        prepared,
        { ...options, timeoutMs, maxCaptureBytes: this.maxCaptureBytes },
        await this.outputRewrite(options.env),
        this.logger,
        this.id,
      );
      return (await namespace.newOomKills()) > 0 ? outOfMemory(result) : result;
    }
    return runHostExec(
      this.runner,
      prepared,
      { ...options, timeoutMs, maxCaptureBytes: this.maxCaptureBytes },
      await this.outputRewrite(options.env),
      this.logger,
      this.id,
    );
  }

  /**
   * Everything a host command needs before it is spawned: host bash allowed, env checked, virtual
   * paths in the command translated, the env built under the policy and tagged, cwd resolved
   * through the mount table (so it is confined like every other path).
   */
  private async prepareCommand(
    command: string,
    options: { env?: Readonly<Record<string, string>> | undefined; cwd?: string | undefined },
  ): Promise<PreparedHostCommand> {
    if (this.confinement) return this.prepareConfined(command, options, this.confinement);
    if (!this.allowHostBash) throw new HostBashDisabledError(LOCAL_HOST_BASH_DISABLED_MESSAGE);
    assertCommandText(command);
    validateExtraEnv(options.env);
    const cwd = options.cwd === undefined ? undefined : await this.resolveCwd(options.cwd);
    const translated = await translateContainerPaths(command, this.table, 'command');
    const shell = this.shell ?? (await sharedDefaultShell());
    const env = buildSandboxEnv(options.env, { mode: this.envPolicy, allow: this.envAllow });
    // Set last, so neither the host nor an injected variable can hide a command from the reaper.
    this.commandsSinceReap = true;
    if (this.processTags) {
      env[SANDBOX_PROCESS_MARKER] = this.processTags.sandbox;
      if (this.processTags.provider) env[PROVIDER_PROCESS_MARKER] = this.processTags.provider;
    }
    return {
      shell,
      command: translated,
      env,
      ...(cwd !== undefined ? { cwd } : {}),
      ...(this.sessions ? { session: this.sessions } : {}),
    };
  }

  /**
   * A confined command: the agent's text as it is (virtual paths are real paths in the
   * namespace; host paths of its mounts are shown as the virtual ones they are), the working directory a virtual path checked through the
   * mount table like any other, the environment under the policy with the sandbox's own `HOME`,
   * `USER`, `PATH`; spawned as the namespace's entry.
   */
  private async prepareConfined(
    command: string,
    options: { env?: Readonly<Record<string, string>> | undefined; cwd?: string | undefined },
    confinement: SandboxConfinement,
  ): Promise<PreparedHostCommand> {
    assertCommandText(command);
    validateExtraEnv(options.env);
    let cwd = confinement.initCwd;
    if (options.cwd !== undefined) {
      await this.resolveCwd(options.cwd);
      cwd = normalizeVirtualRoot(options.cwd);
    }
    const shell = this.shell ?? (await sharedDefaultShell());
    // The tool layer (and any caller written for the host) may have turned virtual paths into
    // host paths; in the namespace only the virtual ones exist, so they are turned back.
    const native = (await this.masker()).mask(command);
    this.commandsSinceReap = true;
    const plan = await confinement.namespace.entry(shell, shellArgs(shell, native), cwd);
    // The namespace's own variables (its egress proxy) pass the policy, as the call's do; the
    // call's win (a command that drops the proxy only loses its way out).
    const env = buildSandboxEnv(plan.env ? { ...plan.env, ...options.env } : options.env, {
      mode: this.envPolicy,
      allow: this.envAllow,
      baseEnv: confinedBaseEnv(shell),
    });
    return { shell, command: native, env, plan };
  }

  private async resolveCwd(cwd: string): Promise<string> {
    if (typeof cwd !== 'string' || cwd === '') {
      throw new InvalidArgumentError('cwd must be a non-empty path');
    }
    const { hostPath } = await this.table.resolve(cwd, 'read');
    const info = await stat(hostPath).catch((error: unknown) => {
      throw toFileError(error, cwd, 'cwd');
    });
    if (!info.isDirectory()) {
      throw new SandboxFileError(`cwd is not a directory: ${cwd}`, {
        path: cwd,
        operation: 'cwd',
        kind: 'ENOTDIR',
      });
    }
    return hostPath;
  }

  /**
   * Host paths shown as virtual paths, then the call's injected secrets redacted — each line of a
   * multi-line secret too, since streamed output is rewritten a line at a time.
   */
  private async outputRewrite(
    env: Readonly<Record<string, string>> | undefined,
  ): Promise<(text: string) => string> {
    const masker = await this.masker();
    const secrets = secretsForLines(env);
    return (text) => redactSecrets(masker.mask(text), secrets);
  }

  /** Kills the background processes this client started. Idempotent. */
  override async close(): Promise<void> {
    await this.processTable.close();
  }

  override async readFile(filePath: string, options: ReadFileOptions = {}): Promise<string> {
    const { handle, hostPath } = await this.openFile(filePath, 'read', 'read');
    let text: string;
    try {
      const ranged = options.startLine !== undefined || options.endLine !== undefined;
      text = ranged
        ? await readLineRange(handle, filePath, options)
        : await readWholeText(handle, filePath);
    } finally {
      await handle.close();
    }
    // Only text this sandbox wrote had its virtual paths turned into host paths; uploads and
    // command output are returned exactly as they are.
    return this.agentWritten.has(hostPath) ? this.maskHostPaths(text) : text;
  }

  /**
   * The file's identity and timestamps (device, inode, size, mtime and ctime in nanoseconds):
   * any write changes at least one, and taking it costs one `fstat`, whatever the file's size.
   */
  override async fileFingerprint(filePath: string): Promise<string> {
    const { handle } = await this.openFile(filePath, 'read', 'read');
    try {
      const s = await handle.stat({ bigint: true });
      return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
    } finally {
      await handle.close();
    }
  }

  /** See `file-ownership`: only in the thread's own writable directories, only for a root gateway. */
  private async handToSandboxUser(
    handle: FileHandle,
    root: string,
    hostPath: string,
  ): Promise<void> {
    const owner = this.confinement?.owner;
    if (!owner || !this.confinement?.ownedRoots.includes(root)) return;
    await handDirectoriesToOwner(root, path.dirname(hostPath), owner);
    await handFileToOwner(handle, owner);
  }

  private openFile(
    filePath: string,
    access: FileAccess,
    operation: string,
  ): Promise<{ handle: FileHandle; hostPath: string; root: string }> {
    return openSandboxFile(this.table, filePath, access, operation);
  }

  override async downloadFile(filePath: string): Promise<Uint8Array> {
    const normalized = filePath.replace(/\\/g, '/').replace(/^\/+/, '');
    const root = VIRTUAL_PATH_PREFIX.slice(1);
    if (normalized !== root && !normalized.startsWith(`${root}/`)) {
      this.logger.error('Refused download outside allowed directory', { path: filePath });
      throw new SandboxPermissionError(
        `Access denied: path must be under '${VIRTUAL_PATH_PREFIX}'`,
        { path: filePath, operation: 'download' },
      );
    }
    const { handle } = await this.openFile(`/${normalized}`, 'read', 'download');
    try {
      const info = await handle.stat();
      if (info.size > MAX_DOWNLOAD_BYTES) throw tooLarge(filePath);
      const bytes = await handle.readFile();
      // The file may have grown between stat and read.
      if (bytes.length > MAX_DOWNLOAD_BYTES) throw tooLarge(filePath);
      return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
    } catch (err) {
      throw toFileError(err, filePath, 'download');
    } finally {
      await handle.close();
    }
  }

  override async writeFile(
    filePath: string,
    content: string,
    options: WriteFileOptions = {},
  ): Promise<void> {
    const translated = await translateContainerPaths(content, this.table, 'content');
    const { handle, hostPath, root } = await this.openFile(
      filePath,
      options.append ? 'append' : 'write',
      'write',
    );
    try {
      // Truncated only now, after the opened file passed its checks.
      if (!options.append) await handle.truncate(0);
      await handle.writeFile(translated, 'utf8');
      await this.handToSandboxUser(handle, root, hostPath);
    } catch (err) {
      throw toFileError(err, filePath, 'write');
    } finally {
      await handle.close();
    }
    this.agentWritten.add(hostPath);
  }

  override async updateFile(filePath: string, content: Uint8Array): Promise<void> {
    const { handle, hostPath, root } = await this.openFile(filePath, 'write', 'update');
    try {
      await handle.truncate(0);
      await handle.writeFile(content);
      await this.handToSandboxUser(handle, root, hostPath);
    } catch (err) {
      throw toFileError(err, filePath, 'update');
    } finally {
      await handle.close();
    }
  }

  override async listDir(dirPath: string, options: ListDirOptions = {}): Promise<string[]> {
    const parentOfMounts = mountsBelow(this.table, dirPath);
    if (parentOfMounts) return parentOfMounts;
    const { hostPath } = await this.table.resolve(dirPath, 'read');
    const hostEntries = await listDirTree(hostPath, {
      maxDepth: options.maxDepth,
      logger: this.logger,
    });
    const virtualEntries = await this.table.toContainerPaths(
      hostEntries.map((e) => (e.endsWith('/') ? e.slice(0, -1) : e)),
    );
    const listed = new Set(
      virtualEntries.map((v, i) => ((hostEntries[i] as string).endsWith('/') ? `${v}/` : v)),
    );
    // Mounts directly below the listed directory show up even though their host directories live
    // elsewhere (`ls /mnt/skills` lists `public/`, `custom/`, ...).
    const parent = normalizeVirtualRoot(dirPath);
    const present = new Set([...listed].map((e) => e.replace(/\/$/, '')));
    for (const mapping of this.table.mappings) {
      const cp = mapping.containerPath;
      if (cp === parent || path.posix.dirname(cp) !== parent || present.has(cp)) continue;
      if (await isDirectory(mapping.hostPath)) {
        listed.add(`${cp}/`);
        present.add(cp);
      }
    }
    return [...listed].sort();
  }

  override async glob(
    root: string,
    pattern: string,
    options: GlobOptions = {},
  ): Promise<GlobResult> {
    const { hostPath } = await this.table.resolve(root, 'read');
    const result = await findGlobMatches(hostPath, pattern, {
      includeDirs: options.includeDirs,
      maxResults: options.maxResults,
      displayPath: root,
      logger: this.logger,
      timeoutMs: this.searchTimeoutMs,
    });
    return { paths: await this.table.toContainerPaths(result.paths), truncated: result.truncated };
  }

  override async grep(
    root: string,
    pattern: string,
    options: GrepOptions = {},
  ): Promise<GrepResult> {
    const { hostPath } = await this.table.resolve(root, 'read');
    const result = await findGrepMatches(hostPath, pattern, {
      glob: options.glob,
      literal: options.literal,
      caseSensitive: options.caseSensitive,
      maxResults: options.maxResults,
      displayPath: root,
      logger: this.logger,
      timeoutMs: this.searchTimeoutMs,
    });
    const paths = await this.table.toContainerPaths(result.matches.map((m) => m.path));
    return {
      matches: result.matches.map((m, i) => ({ ...m, path: paths[i] as string })),
      truncated: result.truncated,
    };
  }
}

/**
 * The kernel killed a process of the sandbox for its memory limit while the command ran: said in
 * its output, so the agent knows why (a bare `Killed` reads like a crash).
 */
function outOfMemory(result: ExecResult): ExecResult {
  const note =
    'The sandbox ran out of memory: the kernel killed a process at the memory limit (sandbox.local.limits.memory).';
  return { ...result, stderr: result.stderr ? `${result.stderr}\n${note}` : note };
}

function tooLarge(shown: string): SandboxFileError {
  return new SandboxFileError(`File exceeds maximum download size of ${MAX_DOWNLOAD_BYTES} bytes`, {
    path: shown,
    operation: 'download',
    kind: 'EFBIG',
  });
}

async function isDirectory(hostPath: string): Promise<boolean> {
  try {
    return (await stat(hostPath)).isDirectory();
  } catch {
    // A mount whose host directory is missing is simply not shown.
    return false;
  }
}
