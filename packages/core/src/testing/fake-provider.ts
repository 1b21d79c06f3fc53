import { CapabilityNotSupportedError } from '../errors/capability-errors.js';
import { ProviderClosedError, SandboxFileNotFoundError } from '../errors/errors.js';
import { SandboxProviderEventEmitter } from '../contract/provider-events.js';
import type {
  SandboxProviderEventListener,
  SandboxProviderEvents,
} from '../contract/provider-events.js';
import type {
  ExecuteCommandOptions,
  GlobOptions,
  GlobResult,
  GrepMatch,
  GrepOptions,
  GrepResult,
  ListDirOptions,
  ReadFileOptions,
  WriteFileOptions,
} from '../contract/sandbox.js';
import { Sandbox } from '../contract/sandbox.js';
import type { ExecOptions, ExecResult } from '../contract/sandbox-exec.js';
import type { AcquireOptions, SyncAgentSkillsOptions } from '../contract/sandbox-provider.js';
import { SandboxProvider } from '../contract/sandbox-provider.js';
import { CallGate } from './pausable.js';
import { DEFAULT_SPEC_POLICY, checkSandboxSpec } from '../contract/sandbox-spec.js';
import { assertValidThreadIdentity } from '../identity/thread-id-rules.js';

/**
 * In-memory sandbox and provider for lifecycle and race tests. Nothing here touches a process, the
 * network or the disk. Both record what was asked of them and route their async calls through a
 * `CallGate`, so a test can hold any call (`provider.gate.pause('release')`) and let it go later.
 */

export type FakeSandboxMethod = 'executeCommand' | 'releaseCommandScope' | 'close';

function notFound(path: string, operation: string): SandboxFileNotFoundError {
  return new SandboxFileNotFoundError(`File not found: ${path}`, { path, operation });
}

function globToRegExp(pattern: string): RegExp {
  let out = '';
  for (let i = 0; i < pattern.length; i += 1) {
    const c = pattern[i] as string;
    if (c === '*') {
      if (pattern[i + 1] === '*') {
        out += '.*';
        i += 1;
        if (pattern[i + 1] === '/') i += 1;
      } else {
        out += '[^/]*';
      }
    } else if (c === '?') out += '[^/]';
    else out += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${out}$`);
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/**
 * A sandbox whose filesystem is a map and whose shell understands one command: `echo <text>`
 * (anything else prints nothing). Commands, scope releases and closes are recorded in order.
 */
export class FakeSandbox extends Sandbox {
  readonly gate = new CallGate<FakeSandboxMethod>();
  readonly files = new Map<string, Uint8Array>();
  /** Every command run, with the scope it ran in (if any). */
  readonly commands: { command: string; scopeId: string | undefined }[] = [];
  /** Scope ids passed to `releaseCommandScope`, in call order (including failed ones). */
  readonly releasedScopes: string[] = [];
  /** When set, `releaseCommandScope` rejects with this error (after recording the call). */
  failScopeRelease: Error | undefined;
  closed = false;

  override async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    const text = await this.#run(command, options.scopeId, options);
    const stdout = text === '(no output)' ? '' : text;
    if (stdout) options.onStdout?.(stdout);
    return { exitCode: 0, stdout, stderr: '', durationMs: 0, truncated: false, timedOut: false };
  }

  override executeCommand(command: string, options: ExecuteCommandOptions = {}): Promise<string> {
    return this.#run(command, undefined, options);
  }

  override executeCommandInScope(
    command: string,
    options: ExecuteCommandOptions & { scopeId: string },
  ): Promise<string> {
    return this.#run(command, options.scopeId, options);
  }

  override releaseCommandScope(scopeId: string): Promise<void> {
    return this.gate.invoke('releaseCommandScope', [scopeId], async () => {
      this.releasedScopes.push(scopeId);
      if (this.failScopeRelease) throw this.failScopeRelease;
    });
  }

  async readFile(path: string, options: ReadFileOptions = {}): Promise<string> {
    const data = this.files.get(path);
    if (data === undefined) throw notFound(path, 'read');
    const text = decoder.decode(data);
    if (options.startLine === undefined && options.endLine === undefined) return text;
    const lines = text.split('\n');
    return lines.slice((options.startLine ?? 1) - 1, options.endLine ?? lines.length).join('\n');
  }

  async downloadFile(path: string): Promise<Uint8Array> {
    const data = this.files.get(path);
    if (data === undefined) throw notFound(path, 'download');
    return data.slice();
  }

  async writeFile(path: string, content: string, options: WriteFileOptions = {}): Promise<void> {
    const previous = options.append ? decoder.decode(this.files.get(path) ?? new Uint8Array()) : '';
    this.files.set(path, encoder.encode(previous + content));
  }

  async updateFile(path: string, content: Uint8Array): Promise<void> {
    this.files.set(path, content.slice());
  }

  async listDir(path: string, options: ListDirOptions = {}): Promise<string[]> {
    const root = path.replace(/\/+$/, '');
    const maxDepth = options.maxDepth ?? 2;
    const out = new Set<string>();
    for (const file of this.files.keys()) {
      if (!file.startsWith(`${root}/`)) continue;
      const parts = file.slice(root.length + 1).split('/');
      for (let depth = 1; depth <= Math.min(maxDepth, parts.length); depth += 1) {
        const isDir = depth < parts.length;
        out.add(`${root}/${parts.slice(0, depth).join('/')}${isDir ? '/' : ''}`);
      }
    }
    return [...out].sort();
  }

  async glob(path: string, pattern: string, options: GlobOptions = {}): Promise<GlobResult> {
    const root = path.replace(/\/+$/, '');
    const re = globToRegExp(pattern);
    const max = options.maxResults ?? 200;
    const hits = [...this.files.keys()]
      .filter((f) => f.startsWith(`${root}/`) && re.test(f.slice(root.length + 1)))
      .sort();
    return { paths: hits.slice(0, max), truncated: hits.length > max };
  }

  async grep(path: string, pattern: string, options: GrepOptions = {}): Promise<GrepResult> {
    const source = options.literal ? pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : pattern;
    const re = new RegExp(source, options.caseSensitive ? '' : 'i');
    const max = options.maxResults ?? 100;
    const globRe = options.glob === undefined ? undefined : globToRegExp(options.glob);
    const root = path.replace(/\/+$/, '');
    const matches: GrepMatch[] = [];
    for (const [file, data] of [...this.files].sort(([a], [b]) => a.localeCompare(b))) {
      if (file !== path && !file.startsWith(`${root}/`)) continue;
      if (globRe && !globRe.test(file.slice(root.length + 1))) continue;
      decoder
        .decode(data)
        .split('\n')
        .forEach((line, i) => {
          if (re.test(line))
            matches.push({ path: file, lineNumber: i + 1, line: line.slice(0, 200) });
        });
    }
    return { matches: matches.slice(0, max), truncated: matches.length > max };
  }

  override close(): Promise<void> {
    return this.gate.invoke('close', [], async () => {
      this.closed = true;
    });
  }

  #run(
    command: string,
    scopeId: string | undefined,
    _options: ExecuteCommandOptions,
  ): Promise<string> {
    return this.gate.invoke('executeCommand', [command, scopeId], async () => {
      this.commands.push({ command, scopeId });
      const echo = /^echo\s+(.*)$/s.exec(command.trim());
      if (echo === null) return '(no output)';
      return `${(echo[1] as string).replace(/^(['"])(.*)\1$/s, '$2')}\n`;
    });
  }
}

export type FakeProviderMethod = 'acquire' | 'release' | 'reset' | 'shutdown' | 'syncAgentSkills';

export interface FakeProviderCall {
  readonly method: FakeProviderMethod | 'admit';
  readonly args: readonly unknown[];
}

export interface FakeSandboxProviderOptions {
  /** Prefix of generated ids (`<prefix>:<user>:<thread>`). Default `fake`. */
  idPrefix?: string;
  /**
   * Default true: `release` parks the sandbox, so `get` returns `undefined` until it is acquired
   * again (the shape of the warm-pool providers). False: `release` only records (a local provider).
   */
  releaseParks?: boolean;
  supportsAgentSkillIsolation?: boolean;
  /**
   * Awaited at the start of every async provider call, before any state changes. Property-based
   * race tests plug a scheduler in here to randomize how calls interleave.
   */
  intercept?: (call: FakeProviderCall) => void | Promise<void>;
}

/**
 * A provider of `FakeSandbox`es with deterministic ids per user/thread (like the real providers),
 * recording every lifecycle call. `acquire`, `release`, `reset`, `shutdown` and `syncAgentSkills`
 * go through `gate`, so a test can pause them; `failNext` makes the next call of a method fail.
 */
export class FakeSandboxProvider extends SandboxProvider implements SandboxProviderEvents {
  readonly gate = new CallGate<FakeProviderMethod>();
  /** Every sandbox ever created, by id (acquiring a parked id again revives the same object). */
  readonly sandboxes = new Map<string, FakeSandbox>();
  /** Ids returned by `acquire`, in order. */
  readonly acquired: string[] = [];
  /** Ids passed to `release`, in order (including failed calls). */
  readonly released: string[] = [];
  /** Options passed to `admit`, in order. */
  readonly admitted: AcquireOptions[] = [];
  getCalls = 0;
  readonly #active = new Set<string>();
  readonly #failures = new Map<FakeProviderMethod | 'admit', Error[]>();
  readonly #options: FakeSandboxProviderOptions;
  #anonymous = 0;
  /** Set by `reset()` (the reset contract): every later acquire is refused. */
  #retired = false;
  readonly #events = new SandboxProviderEventEmitter();

  constructor(options: FakeSandboxProviderOptions = {}) {
    super();
    this.#options = options;
  }

  override get supportsAgentSkillIsolation(): boolean {
    return this.#options.supportsAgentSkillIsolation ?? false;
  }

  /** The id `acquire` returns for this user/thread. */
  idFor(options: { userId?: string | undefined; threadId: string }): string {
    return `${this.#options.idPrefix ?? 'fake'}:${options.userId ?? 'default'}:${options.threadId}`;
  }

  /** Makes the next call of `method` reject (admit: throw) with `error`. Queued per method. */
  failNext(method: FakeProviderMethod | 'admit', error: Error): this {
    const list = this.#failures.get(method) ?? [];
    list.push(error);
    this.#failures.set(method, list);
    return this;
  }

  /** Simulates a sandbox that vanished behind the provider's back (its `get` turns `undefined`). */
  kill(sandboxId: string): void {
    this.#active.delete(sandboxId);
  }

  isActive(sandboxId: string): boolean {
    return this.#active.has(sandboxId);
  }

  /** Ids currently active (acquired and not parked or killed). */
  get activeIds(): string[] {
    return [...this.#active];
  }

  /** How many times `release` was called for `sandboxId`. */
  releaseCount(sandboxId: string): number {
    return this.released.filter((id) => id === sandboxId).length;
  }

  override admit(options: AcquireOptions = {}): void {
    this.admitted.push(options);
    this.#throwIfFailing('admit');
    super.admit(options);
  }

  acquire(options: AcquireOptions = {}): Promise<string> {
    return this.gate.invoke('acquire', [options], async () => {
      await this.#options.intercept?.({ method: 'acquire', args: [options] });
      this.#throwIfFailing('acquire');
      if (this.#retired) throw new ProviderClosedError('FakeSandboxProvider has been reset');
      // The fake honours no spec: refused as every provider refuses what it cannot honour.
      checkSandboxSpec(options.spec, this.specSupport, DEFAULT_SPEC_POLICY, 'FakeSandboxProvider');
      // Nor does it restore snapshots: refused as `admit` refuses them, never started empty.
      if (options.fromSnapshot !== undefined && !this.lifecycleSupport.snapshot) {
        throw CapabilityNotSupportedError.lifecycle('FakeSandboxProvider', 'fromSnapshot');
      }
      // As every provider's acquire (through `admit`), whoever calls it: ids outside the id rule.
      if (options.threadId !== undefined) {
        assertValidThreadIdentity({ userId: options.userId, threadId: options.threadId });
      }
      const id =
        options.threadId === undefined
          ? `${this.#options.idPrefix ?? 'fake'}:anon:${(this.#anonymous += 1)}`
          : this.idFor({ userId: options.userId, threadId: options.threadId });
      const path = this.#active.has(id) ? 'reuse' : this.sandboxes.has(id) ? 'reclaim' : 'create';
      if (!this.sandboxes.has(id)) this.sandboxes.set(id, new FakeSandbox(id));
      this.#active.add(id);
      this.acquired.push(id);
      this.#events.emit({ type: 'acquire', sandboxId: id, path });
      return id;
    });
  }

  get(sandboxId: string): FakeSandbox | undefined {
    this.getCalls += 1;
    return this.#active.has(sandboxId) ? this.sandboxes.get(sandboxId) : undefined;
  }

  release(sandboxId: string): Promise<void> {
    return this.gate.invoke('release', [sandboxId], async () => {
      await this.#options.intercept?.({ method: 'release', args: [sandboxId] });
      this.released.push(sandboxId);
      this.#throwIfFailing('release');
      if (this.#options.releaseParks ?? true) this.#active.delete(sandboxId);
    });
  }

  override reset(): Promise<void> {
    return this.gate.invoke('reset', [], async () => {
      await this.#options.intercept?.({ method: 'reset', args: [] });
      this.#throwIfFailing('reset');
      this.#retired = true;
      this.#active.clear();
    });
  }

  onEvent(listener: SandboxProviderEventListener): () => void {
    return this.#events.onEvent(listener);
  }

  override shutdown(): Promise<void> {
    return this.gate.invoke('shutdown', [], async () => {
      await this.#options.intercept?.({ method: 'shutdown', args: [] });
      this.#throwIfFailing('shutdown');
      this.#active.clear();
    });
  }

  override syncAgentSkills(sandboxId: string, options: SyncAgentSkillsOptions): Promise<void> {
    return this.gate.invoke('syncAgentSkills', [sandboxId, options], async () => {
      await this.#options.intercept?.({ method: 'syncAgentSkills', args: [sandboxId, options] });
      this.#throwIfFailing('syncAgentSkills');
    });
  }

  #throwIfFailing(method: FakeProviderMethod | 'admit'): void {
    const error = this.#failures.get(method)?.shift();
    if (error) throw error;
  }
}
