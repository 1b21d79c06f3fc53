import { describe, expect, it } from 'vitest';
import {
  AbortedError,
  ConfigError,
  InvalidArgumentError,
  LeaseStateError,
  MissingDependencyError,
  OwnershipBackendError,
  ProviderClosedError,
  ProviderLoadError,
  SANDBOX_AUTHORIZATION_DENIED_MESSAGE,
  SandboxAuthorizationError,
  SandboxBeingDestroyedError,
  SandboxCapacityExceededError,
  SandboxCommandError,
  SandboxFileError,
  SandboxFileNotFoundError,
  SandboxIdentityCollisionError,
  SandboxNotFoundError,
  SandboxPermissionError,
  SandboxRuntimeError,
  SbxError,
  SerializerClosedError,
  isSbxError,
} from './errors.js';

describe('SbxError', () => {
  it('§1.12 renders details after the message in insertion order; none → message only', () => {
    expect(new SbxError('boom').message).toBe('boom');
    const e = new SbxError('boom', { details: { b: 2, a: 'x' } });
    expect(e.message).toBe('boom (b=2, a=x)');
    expect(e.baseMessage).toBe('boom');
    expect(e.details).toEqual({ b: 2, a: 'x' });
  });

  it('renders structured detail values readably', () => {
    expect(new SbxError('m', { details: { paths: ['/a', '/b'], n: null } }).message).toBe(
      'm (paths=["/a","/b"], n=null)',
    );
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(new SbxError('m', { details: { c: cyclic } }).message).toBe('m (c=[object Object])');
  });

  it('carries a stable code, name and cause', () => {
    const cause = new Error('root');
    const e = new SbxError('x', { cause, code: 'CUSTOM' });
    expect(e.code).toBe('CUSTOM');
    expect(e.cause).toBe(cause);
    expect(new SbxError('x').code).toBe('SBX_ERROR');
    expect(new SbxError('x').name).toBe('SbxError');
    expect(new SbxError('x')).toBeInstanceOf(Error);
  });

  it('every subclass has its own code and its class name as name', () => {
    const cases: Array<[SbxError, string]> = [
      [new SandboxNotFoundError(), 'SANDBOX_NOT_FOUND'],
      [new SandboxRuntimeError('r'), 'SANDBOX_RUNTIME'],
      [new SandboxCommandError('c'), 'SANDBOX_COMMAND'],
      [new SandboxFileError('f'), 'SANDBOX_FILE'],
      [new SandboxPermissionError('p'), 'SANDBOX_PERMISSION'],
      [new SandboxFileNotFoundError('n'), 'SANDBOX_FILE_NOT_FOUND'],
      [new SandboxCapacityExceededError(), 'SANDBOX_CAPACITY_EXCEEDED'],
      [new SandboxAuthorizationError(), 'SANDBOX_AUTHORIZATION'],
      [new SandboxBeingDestroyedError('id'), 'SANDBOX_BEING_DESTROYED'],
      [new SandboxIdentityCollisionError('id', 'a', 'b'), 'SANDBOX_IDENTITY_COLLISION'],
      [new OwnershipBackendError('o'), 'OWNERSHIP_BACKEND'],
      [new MissingDependencyError('pkg', 'me'), 'MISSING_DEPENDENCY'],
      [new ConfigError([]), 'CONFIG_INVALID'],
      [new InvalidArgumentError('i'), 'INVALID_ARGUMENT'],
      [new ProviderLoadError('s', 'm'), 'PROVIDER_LOAD'],
      [new SerializerClosedError(), 'ACQUIRE_SERIALIZER_CLOSED'],
      [new ProviderClosedError(), 'PROVIDER_CLOSED'],
      [new LeaseStateError('l'), 'LEASE_STATE'],
      [new AbortedError(), 'ABORTED'],
    ];
    for (const [err, code] of cases) {
      expect(err.code).toBe(code);
      expect(err.name).toBe(err.constructor.name);
      expect(err).toBeInstanceOf(SbxError);
    }
    expect(new Set(cases.map(([, c]) => c)).size).toBe(cases.length);
  });

  it('file errors keep the SandboxFileError family and a POSIX kind', () => {
    expect(new SandboxPermissionError('p')).toBeInstanceOf(SandboxFileError);
    expect(new SandboxPermissionError('p').kind).toBe('EACCES');
    expect(new SandboxPermissionError('p', { kind: 'EROFS' }).kind).toBe('EROFS');
    expect(new SandboxFileNotFoundError('n').kind).toBe('ENOENT');
    expect(new SandboxFileError('f').kind).toBe('EIO');
    const e = new SandboxFileError('cannot write', {
      path: '/mnt/x',
      operation: 'write',
      kind: 'EISDIR',
    });
    expect(e.message).toBe('cannot write (path=/mnt/x, operation=write)');
    expect([e.path, e.operation, e.kind]).toEqual(['/mnt/x', 'write', 'EISDIR']);
  });
});

describe('§1.12 details of the sandbox errors', () => {
  it('SandboxNotFoundError: default message; sandbox_id only when truthy', () => {
    expect(new SandboxNotFoundError().message).toBe('Sandbox not found');
    expect(new SandboxNotFoundError(undefined, '').message).toBe('Sandbox not found');
    const e = new SandboxNotFoundError('Sandbox not found after acquisition', 'abc');
    expect(e.message).toBe('Sandbox not found after acquisition (sandbox_id=abc)');
    expect(e.sandboxId).toBe('abc');
  });

  it('SandboxCommandError: command truncated to 100 chars + "...", exit code when given', () => {
    const long = 'x'.repeat(150);
    const e = new SandboxCommandError('failed', long, 2);
    expect(e.details).toEqual({ command: `${'x'.repeat(100)}...`, exit_code: 2 });
    expect(e.command).toBe(long);
    expect(e.exitCode).toBe(2);
    expect(new SandboxCommandError('failed', 'ls', 0).message).toBe(
      'failed (command=ls, exit_code=0)',
    );
    expect(new SandboxCommandError('failed', 'x'.repeat(100)).details).toEqual({
      command: 'x'.repeat(100),
    });
    expect(new SandboxCommandError('failed').message).toBe('failed');
  });

  it('SandboxCapacityExceededError: fixed keys always, counts only when non-zero', () => {
    const e = new SandboxCapacityExceededError();
    expect(e.message).toBe(
      'All sandbox replica slots are in use (code=SANDBOX_CAPACITY_EXCEEDED, reason=capacity, replicas=0, retryable=true, retry_after_seconds=5)',
    );
    expect(Object.keys(e.details)).toEqual([
      'code',
      'reason',
      'replicas',
      'retryable',
      'retry_after_seconds',
    ]);
    expect([e.retryable, e.retryAfterSeconds, e.reason]).toEqual([true, 5, 'capacity']);

    const full = new SandboxCapacityExceededError('full', {
      active: 2,
      warm: 1,
      reserved: 0,
      replicas: 3,
      retryAfterSeconds: 2.5,
      reason: 'shutdown',
    });
    expect(full.details).toEqual({
      code: 'SANDBOX_CAPACITY_EXCEEDED',
      reason: 'shutdown',
      replicas: 3,
      retryable: true,
      retry_after_seconds: 2.5,
      active: 2,
      warm: 1,
    });
    expect([full.active, full.warm, full.reserved, full.replicas]).toEqual([2, 1, 0, 3]);
  });

  it('SandboxAuthorizationError: the friendly default message; role when given', () => {
    expect(new SandboxAuthorizationError().message).toBe(SANDBOX_AUTHORIZATION_DENIED_MESSAGE);
    expect(new SandboxAuthorizationError(undefined, 'guest').message).toBe(
      `${SANDBOX_AUTHORIZATION_DENIED_MESSAGE} (role=guest)`,
    );
  });

  it('identity collision and being-destroyed messages name the ids', () => {
    expect(new SandboxIdentityCollisionError('abc', 'u1:t1', 'u2:t2').message).toBe(
      'sandbox ID collision for abc: tracked identity is u1:t1, requested identity is u2:t2',
    );
    expect(new SandboxBeingDestroyedError('abc').message).toBe(
      'sandbox abc is being destroyed by another instance',
    );
  });
});

describe('ConfigError', () => {
  it('lists every issue under a heading', () => {
    const e = new ConfigError([
      { path: 'sandbox.replicas', message: 'must be > 0' },
      { path: '', message: 'expected a mapping' },
    ]);
    expect(e.message).toBe(
      'Invalid sbx configuration:\n  - sandbox.replicas: must be > 0\n  - <root>: expected a mapping',
    );
    expect(e.issues).toHaveLength(2);
    expect(new ConfigError([], 'Custom').message).toBe('Custom');
  });
});

describe('MissingDependencyError and ProviderLoadError', () => {
  it('MissingDependencyError names the package, the requirer and the install command', () => {
    const e = new MissingDependencyError('dockerode', '@sbx/aio LocalContainerBackend');
    expect(e.installCommand).toBe('npm install dockerode');
    expect(e.packageName).toBe('dockerode');
    expect(e.message).toContain('@sbx/aio LocalContainerBackend');
    expect(e.message).toContain('npm install dockerode');
  });

  it('ProviderLoadError keeps the specifier', () => {
    expect(new ProviderLoadError('@sbx/x', 'nope').specifier).toBe('@sbx/x');
  });
});

describe('isSbxError', () => {
  it('recognises SbxErrors, including ones from another copy of the module', () => {
    expect(isSbxError(new SandboxRuntimeError('x'))).toBe(true);
    const foreign = Object.assign(new Error('x'), {
      code: 'SANDBOX_RUNTIME',
      details: {},
      baseMessage: 'x',
    });
    expect(isSbxError(foreign)).toBe(true);
  });

  it('rejects plain errors and look-alikes that are not errors', () => {
    expect(isSbxError(new Error('x'))).toBe(false);
    expect(isSbxError(Object.assign(new Error('x'), { code: 'ENOENT' }))).toBe(false);
    expect(isSbxError({ code: 'X', details: {}, baseMessage: 'x' })).toBe(false);
    expect(isSbxError(null)).toBe(false);
  });
});

describe('per-class checks by code', () => {
  it('XError.is and isSbxError(err, code) match by code, across duplicated installs too', () => {
    const aborted = new AbortedError();
    expect(AbortedError.is(aborted)).toBe(true);
    expect(InvalidArgumentError.is(aborted)).toBe(false);
    expect(isSbxError(aborted, AbortedError.CODE)).toBe(true);
    expect(isSbxError(aborted, ConfigError.CODE)).toBe(false);
    expect(isSbxError(aborted)).toBe(true);
    // What an error of another copy of @sbx/core looks like to this one: same shape, other class.
    const foreign = Object.assign(new Error('x'), {
      code: 'ABORTED',
      details: {},
      baseMessage: 'x',
    });
    expect(foreign instanceof SbxError).toBe(false);
    expect(AbortedError.is(foreign)).toBe(true);
    expect(AbortedError.is(Object.assign(new Error('x'), { code: 'ABORTED' }))).toBe(false);
    expect(AbortedError.is(undefined)).toBe(false);
  });
});
