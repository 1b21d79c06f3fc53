// Test helpers shared by this package's tests. Not exported from the package.
import { Sandbox, SandboxFileNotFoundError, SandboxProvider } from '@sbx/core';
import type {
  AcquireOptions,
  ExecResult,
  GlobResult,
  GrepResult,
  Logger,
  WriteFileOptions,
} from '@sbx/core';
import type { AuthorizationConfig } from './authorization-config.js';
import type {
  AuthorizationDecision,
  AuthorizationProvider,
  AuthorizeOptions,
} from './authorization-provider.js';
import type { Principal } from './principal.js';
import { RbacAuthorizationProvider } from './rbac-provider.js';
import type { RbacProviderConfig } from './rbac-provider.js';

export interface RecordedCall {
  role: string | undefined;
  resource: string;
  action: string;
  target: string;
}

/** Records every decision request, then lets the real provider decide. */
export class CountingProvider implements AuthorizationProvider {
  constructor(
    readonly inner: AuthorizationProvider,
    readonly calls: RecordedCall[] = [],
  ) {}

  authorize(
    principal: Principal,
    resource: string,
    action: string,
    options: AuthorizeOptions,
  ): Promise<AuthorizationDecision> {
    this.calls.push({ role: principal.role, resource, action, target: options.target });
    return this.inner.authorize(principal, resource, action, options);
  }

  async filterResources(
    principal: Principal,
    resourceType: string,
    candidates: readonly string[],
  ): Promise<string[]> {
    this.calls.push({
      role: principal.role,
      resource: resourceType,
      action: 'filter',
      target: '*',
    });
    if (!this.inner.filterResources) throw new Error('inner provider cannot filter');
    return this.inner.filterResources(principal, resourceType, candidates);
  }
}

export const ROLES: RbacProviderConfig = {
  roles: {
    admin: { tools: { allow: '*' }, sandbox: { allow: '*' } },
    user: { tools: { allow: '*', deny: ['update_agent'] } },
    guest: { tools: { allow: ['web_search', 'read_file'] }, sandbox: { allow: [] } },
    blocked: { sandbox: { allow: false } },
  },
};

export function rbacConfig(overrides: Partial<AuthorizationConfig> = {}): AuthorizationConfig {
  return {
    enabled: true,
    failClosed: true,
    defaultRole: 'user',
    provider: { config: ROLES as unknown as Record<string, unknown> },
    ...overrides,
  };
}

/** A counting decorator around a fresh RBAC provider built from `config` on every resolution. */
export function countingRbac(): {
  calls: RecordedCall[];
  resolveProvider: (config: AuthorizationConfig) => CountingProvider;
} {
  const calls: RecordedCall[] = [];
  return {
    calls,
    // A fresh provider per resolution, like the default resolver; one shared log of decisions.
    resolveProvider: (config) =>
      new CountingProvider(
        new RbacAuthorizationProvider(config.provider?.config as unknown as RbacProviderConfig),
        calls,
      ),
  };
}

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string;
  fields: Record<string, unknown> | undefined;
}

export function recordingLogger(): Logger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at =
    (level: LogLine['level']) =>
    (msg: string, fields?: Record<string, unknown>): void => {
      lines.push({ level, msg, fields });
    };
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** A provider whose `authorize` always throws. */
export function failingProvider(error = new Error('policy backend down')): AuthorizationProvider {
  return {
    authorize: () => Promise.reject(error),
  };
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A sandbox whose filesystem is a map; `executeCommand` echoes the command it was given. */
export class MemorySandbox extends Sandbox {
  readonly files = new Map<string, string>();
  /** Every sandbox operation, in order (`read:/path`, `write:/path`, `exec:cmd`, ...). */
  readonly operations: string[] = [];

  async exec(command: string): Promise<ExecResult> {
    this.operations.push(`exec:${command}`);
    return {
      exitCode: 0,
      stdout: `ran: ${command}`,
      stderr: '',
      durationMs: 0,
      truncated: false,
      timedOut: false,
    };
  }
  async readFile(path: string): Promise<string> {
    this.operations.push(`read:${path}`);
    const content = this.files.get(path);
    if (content === undefined) {
      throw new SandboxFileNotFoundError(`File not found: ${path}`, { path, operation: 'read' });
    }
    return content;
  }
  async downloadFile(path: string): Promise<Uint8Array> {
    return encoder.encode(await this.readFile(path));
  }
  async writeFile(path: string, content: string, options: WriteFileOptions = {}): Promise<void> {
    this.operations.push(`write:${path}`);
    this.files.set(path, (options.append ? (this.files.get(path) ?? '') : '') + content);
  }
  async updateFile(path: string, content: Uint8Array): Promise<void> {
    this.operations.push(`update:${path}`);
    this.files.set(path, decoder.decode(content));
  }
  async listDir(path: string): Promise<string[]> {
    this.operations.push(`ls:${path}`);
    return [...this.files.keys()].filter((f) => f.startsWith(`${path}/`)).sort();
  }
  async glob(): Promise<GlobResult> {
    return { paths: [], truncated: false };
  }
  async grep(): Promise<GrepResult> {
    return { matches: [], truncated: false };
  }
}

/**
 * One sandbox per thread, kept until `release` is called (then `get` no longer finds it, like a
 * provider that parked it). Records acquisitions and releases.
 */
export class MemoryProvider extends SandboxProvider {
  readonly sandboxes = new Map<string, MemorySandbox>();
  readonly acquired: AcquireOptions[] = [];
  readonly released: string[] = [];

  async acquire(options: AcquireOptions = {}): Promise<string> {
    this.acquired.push(options);
    const id = `mem-${options.threadId ?? 'anon'}-${this.acquired.length}`;
    this.sandboxes.set(id, new MemorySandbox(id));
    return id;
  }
  get(sandboxId: string): MemorySandbox | undefined {
    return this.sandboxes.get(sandboxId);
  }
  async release(sandboxId: string): Promise<void> {
    this.released.push(sandboxId);
    this.sandboxes.delete(sandboxId);
  }
}
