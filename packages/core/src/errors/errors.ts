/**
 * Every error sbx raises on purpose is an `SbxError` with a stable `code`, so host applications can
 * branch on `err.code` across package boundaries (and across duplicated installs, where
 * `instanceof` can fail) instead of matching message text.
 */
export type SbxErrorDetails = Record<string, unknown>;

export interface SbxErrorOptions {
  details?: SbxErrorDetails;
  cause?: unknown;
}

function renderValue(v: unknown): string {
  if (typeof v !== 'object' || v === null) return String(v);
  // Structured values (lists of paths, nested ids) would otherwise read "[object Object]".
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

function renderDetails(details: SbxErrorDetails): string {
  const parts = Object.entries(details).map(([k, v]) => `${k}=${renderValue(v)}`);
  return parts.length === 0 ? '' : ` (${parts.join(', ')})`;
}

export class SbxError extends Error {
  static readonly CODE: string = 'SBX_ERROR';
  readonly code: string;
  readonly details: SbxErrorDetails;
  /** The message without the rendered details. */
  readonly baseMessage: string;

  constructor(message: string, options: SbxErrorOptions & { code?: string } = {}) {
    const details = options.details ?? {};
    super(
      message + renderDetails(details),
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = new.target.name;
    this.code = options.code ?? (new.target as typeof SbxError).CODE;
    this.details = details;
    this.baseMessage = message;
  }

  /**
   * `AbortedError.is(err)`: `err` is an sbx error of this class's code, by code rather than by
   * prototype, so it holds across duplicated installs of @sbx/core (where `instanceof` fails).
   */
  static is<T extends typeof SbxError>(this: T, value: unknown): value is InstanceType<T> {
    return isSbxError(value, this.CODE);
  }
}

/**
 * Type guard that also works across duplicated module instances; with `code`, only an sbx error
 * of that code (`isSbxError(err, ConfigError.CODE)`).
 */
export function isSbxError(value: unknown, code?: string): value is SbxError {
  const shaped =
    value instanceof SbxError ||
    (value instanceof Error &&
      typeof (value as { code?: unknown }).code === 'string' &&
      typeof (value as { details?: unknown }).details === 'object' &&
      'baseMessage' in value);
  return shaped && (code === undefined || (value as SbxError).code === code);
}

function pick(entries: Record<string, unknown>): SbxErrorDetails {
  const out: SbxErrorDetails = {};
  for (const [k, v] of Object.entries(entries)) {
    if (v !== undefined && v !== null && v !== '') out[k] = v;
  }
  return out;
}

export class SandboxNotFoundError extends SbxError {
  static override readonly CODE = 'SANDBOX_NOT_FOUND';
  readonly sandboxId: string | undefined;
  constructor(message = 'Sandbox not found', sandboxId?: string, options: SbxErrorOptions = {}) {
    super(message, { ...options, details: pick({ sandbox_id: sandboxId }) });
    this.sandboxId = sandboxId;
  }
}

export class SandboxRuntimeError extends SbxError {
  static override readonly CODE = 'SANDBOX_RUNTIME';
  constructor(message: string, options: SbxErrorOptions = {}) {
    super(message, options);
  }
}

export class SandboxCommandError extends SbxError {
  static override readonly CODE = 'SANDBOX_COMMAND';
  readonly command: string | undefined;
  readonly exitCode: number | undefined;
  constructor(message: string, command?: string, exitCode?: number, options: SbxErrorOptions = {}) {
    const shown =
      command === undefined
        ? undefined
        : command.length > 100
          ? `${command.slice(0, 100)}...`
          : command;
    super(message, { ...options, details: pick({ command: shown, exit_code: exitCode }) });
    this.command = command;
    this.exitCode = exitCode;
  }
}

/** POSIX-style classification of a file failure; mirrors the errno a host filesystem would give. */
export type FileErrorKind =
  | 'ENOENT'
  | 'EACCES'
  | 'EROFS'
  | 'EISDIR'
  | 'ENOTDIR'
  | 'EFBIG'
  | 'EILSEQ'
  | 'EIO'
  /** Not a regular file (FIFO, socket, device): refused before any read could block. */
  | 'EINVAL';

export class SandboxFileError extends SbxError {
  static override readonly CODE: string = 'SANDBOX_FILE';
  readonly path: string | undefined;
  readonly operation: string | undefined;
  readonly kind: FileErrorKind;
  constructor(
    message: string,
    init: { path?: string; operation?: string; kind?: FileErrorKind } = {},
    options: SbxErrorOptions = {},
  ) {
    super(message, { ...options, details: pick({ path: init.path, operation: init.operation }) });
    this.path = init.path;
    this.operation = init.operation;
    this.kind = init.kind ?? 'EIO';
  }
}

export class SandboxPermissionError extends SandboxFileError {
  static override readonly CODE = 'SANDBOX_PERMISSION';
  constructor(
    message: string,
    init: { path?: string; operation?: string; kind?: 'EACCES' | 'EROFS' } = {},
    options: SbxErrorOptions = {},
  ) {
    super(message, { ...init, kind: init.kind ?? 'EACCES' }, options);
  }
}

export class SandboxFileNotFoundError extends SandboxFileError {
  static override readonly CODE = 'SANDBOX_FILE_NOT_FOUND';
  constructor(
    message: string,
    init: { path?: string; operation?: string; kind?: 'ENOENT' | 'ENOTDIR' } = {},
    options: SbxErrorOptions = {},
  ) {
    super(message, { ...init, kind: init.kind ?? 'ENOENT' }, options);
  }
}

export interface CapacityExceededInit {
  active?: number;
  warm?: number;
  reserved?: number;
  replicas?: number;
  retryAfterSeconds?: number;
  reason?: string;
}

export class SandboxCapacityExceededError extends SbxError {
  static override readonly CODE = 'SANDBOX_CAPACITY_EXCEEDED';
  readonly active: number;
  readonly warm: number;
  readonly reserved: number;
  readonly replicas: number;
  readonly retryAfterSeconds: number;
  readonly reason: string;
  readonly retryable = true;
  constructor(
    message = 'All sandbox replica slots are in use',
    init: CapacityExceededInit = {},
    options: SbxErrorOptions = {},
  ) {
    const active = init.active ?? 0;
    const warm = init.warm ?? 0;
    const reserved = init.reserved ?? 0;
    const replicas = init.replicas ?? 0;
    const retryAfterSeconds = init.retryAfterSeconds ?? 5;
    const reason = init.reason ?? 'capacity';
    const details: SbxErrorDetails = {
      code: 'SANDBOX_CAPACITY_EXCEEDED',
      reason,
      replicas,
      retryable: true,
      retry_after_seconds: retryAfterSeconds,
    };
    if (active) details.active = active;
    if (warm) details.warm = warm;
    if (reserved) details.reserved = reserved;
    super(message, { ...options, details });
    this.active = active;
    this.warm = warm;
    this.reserved = reserved;
    this.replicas = replicas;
    this.retryAfterSeconds = retryAfterSeconds;
    this.reason = reason;
  }
}

export const SANDBOX_AUTHORIZATION_DENIED_MESSAGE =
  'Sandbox execution is not permitted for your role';

export class SandboxAuthorizationError extends SbxError {
  static override readonly CODE = 'SANDBOX_AUTHORIZATION';
  readonly role: string | undefined;
  constructor(
    message = SANDBOX_AUTHORIZATION_DENIED_MESSAGE,
    role?: string,
    options: SbxErrorOptions = {},
  ) {
    super(message, { ...options, details: pick({ role }) });
    this.role = role;
  }
}

export class SandboxBeingDestroyedError extends SbxError {
  static override readonly CODE = 'SANDBOX_BEING_DESTROYED';
  readonly sandboxId: string;
  constructor(sandboxId: string, options: SbxErrorOptions = {}) {
    super(`sandbox ${sandboxId} is being destroyed by another instance`, options);
    this.sandboxId = sandboxId;
  }
}

export class SandboxIdentityCollisionError extends SbxError {
  static override readonly CODE = 'SANDBOX_IDENTITY_COLLISION';
  readonly sandboxId: string;
  constructor(
    sandboxId: string,
    tracked: string,
    requested: string,
    options: SbxErrorOptions = {},
  ) {
    super(
      `sandbox ID collision for ${sandboxId}: tracked identity is ${tracked}, requested identity is ${requested}`,
      options,
    );
    this.sandboxId = sandboxId;
  }
}

export class OwnershipBackendError extends SbxError {
  static override readonly CODE = 'OWNERSHIP_BACKEND';
  constructor(message: string, options: SbxErrorOptions = {}) {
    super(message, options);
  }
}

export class MissingDependencyError extends SbxError {
  static override readonly CODE = 'MISSING_DEPENDENCY';
  readonly packageName: string;
  readonly installCommand: string;
  constructor(packageName: string, requiredBy: string, options: SbxErrorOptions = {}) {
    const installCommand = `npm install ${packageName}`;
    super(
      `${requiredBy} needs the optional dependency "${packageName}", which is not installed. Install it with: ${installCommand}`,
      options,
    );
    this.packageName = packageName;
    this.installCommand = installCommand;
  }
}

export interface ConfigIssue {
  /** Dotted key path in the user's (snake_case) layout, e.g. `sandbox.ownership.ttl_multiplier`. */
  path: string;
  message: string;
}

export class ConfigError extends SbxError {
  static override readonly CODE = 'CONFIG_INVALID';
  readonly issues: readonly ConfigIssue[];
  constructor(
    issues: readonly ConfigIssue[],
    heading = 'Invalid sbx configuration',
    options: SbxErrorOptions = {},
  ) {
    const lines = issues.map((i) => `  - ${i.path || '<root>'}: ${i.message}`);
    super(lines.length ? `${heading}:\n${lines.join('\n')}` : heading, options);
    this.issues = issues;
  }
}

/** A caller passed a value the contract rejects (the Python reference raises `ValueError`). */
export class InvalidArgumentError extends SbxError {
  static override readonly CODE = 'INVALID_ARGUMENT';
  constructor(message: string, options: SbxErrorOptions = {}) {
    super(message, options);
  }
}

export class ProviderLoadError extends SbxError {
  static override readonly CODE = 'PROVIDER_LOAD';
  readonly specifier: string;
  constructor(specifier: string, message: string, options: SbxErrorOptions = {}) {
    super(message, options);
    this.specifier = specifier;
  }
}

export const ACQUIRE_SERIALIZER_CLOSED_MESSAGE = 'AcquireSerializer is closed';

export class SerializerClosedError extends SbxError {
  static override readonly CODE = 'ACQUIRE_SERIALIZER_CLOSED';
  constructor(message = ACQUIRE_SERIALIZER_CLOSED_MESSAGE, options: SbxErrorOptions = {}) {
    super(message, options);
  }
}

/** Raised by a provider instance used after `shutdown()` (or a full-teardown `reset()`). */
export class ProviderClosedError extends SbxError {
  static override readonly CODE = 'PROVIDER_CLOSED';
  constructor(message = 'Sandbox provider has been shut down', options: SbxErrorOptions = {}) {
    super(message, options);
  }
}

/** A lease-manager state violation, e.g. an owner moving between thread identities. */
export class LeaseStateError extends SbxError {
  static override readonly CODE = 'LEASE_STATE';
  constructor(message: string, options: SbxErrorOptions = {}) {
    super(message, options);
  }
}

/** Raised when a caller's AbortSignal fires; carries the signal's reason as `cause`. */
export class AbortedError extends SbxError {
  static override readonly CODE = 'ABORTED';
  constructor(message = 'The operation was aborted', options: SbxErrorOptions = {}) {
    super(message, options);
  }
}

/**
 * The deployment-wide capacity ledger could not answer (unreachable, script error, configuration
 * mismatch between gateways, unexpected reply). Callers creating sandboxes treat it as "no capacity"
 * (fail closed).
 */
export class CapacityBackendError extends SbxError {
  static override readonly CODE = 'CAPACITY_BACKEND';
  constructor(message: string, options: SbxErrorOptions = {}) {
    super(message, options);
  }
}

/** Host shell execution was requested from a host-backed sandbox whose configuration forbids it. */
export class HostBashDisabledError extends SbxError {
  static override readonly CODE = 'HOST_BASH_DISABLED';
  constructor(message: string, options: SbxErrorOptions = {}) {
    super(message, options);
  }
}

/**
 * A search (grep or glob) ran past its deadline (`sandbox.search_timeout_seconds`). `partial`
 * holds what was found before the deadline, so a caller can still show it; the message names the
 * limit so the agent knows to narrow the search.
 */
export class SearchTimeoutError<Partial = unknown> extends SbxError {
  static override readonly CODE = 'SEARCH_TIMEOUT';
  readonly timeoutMs: number;
  readonly partial: Partial | undefined;
  constructor(
    operation: 'grep' | 'glob',
    timeoutMs: number,
    partial?: Partial,
    options: SbxErrorOptions = {},
  ) {
    super(
      `${operation} stopped after ${timeoutMs / 1000} s (the search time limit, sandbox.search_timeout_seconds); narrow the path, the pattern or add a glob filter`,
      options,
    );
    this.timeoutMs = timeoutMs;
    this.partial = partial;
  }
}
