import { describe, expect, it } from 'vitest';
import { isTerminalRemoteError, statusCodeOf } from './terminal-errors.js';
import {
  fakeApiError,
  fakeConnectionError,
  fakeUnhealthyError,
} from './testing/fake-sdk-errors.js';

describe('isTerminalRemoteError', () => {
  it('a lost or refused connection is terminal everywhere, found through the cause chain', () => {
    for (const op of ['command', 'renew', 'file', 'kill'] as const) {
      expect(isTerminalRemoteError(fakeConnectionError('ECONNREFUSED'), op)).toBe(true);
      expect(isTerminalRemoteError(fakeConnectionError('ECONNRESET'), op)).toBe(true);
      expect(
        isTerminalRemoteError(new Error('wrapped', { cause: fakeConnectionError('EPIPE') }), op),
      ).toBe(true);
    }
  });

  it('SandboxUnhealthyException and HTTP 410 are terminal everywhere', () => {
    expect(isTerminalRemoteError(fakeUnhealthyError(), 'file')).toBe(true);
    expect(isTerminalRemoteError(fakeApiError(410, 'gone'), 'file')).toBe(true);
    expect(isTerminalRemoteError(fakeApiError(410, 'gone'), 'command')).toBe(true);
  });

  it('HTTP 404 is terminal on command, renewal and delete paths only', () => {
    const notFound = fakeApiError(404, 'not found');
    expect(isTerminalRemoteError(notFound, 'command')).toBe(true);
    expect(isTerminalRemoteError(notFound, 'renew')).toBe(true);
    expect(isTerminalRemoteError(notFound, 'kill')).toBe(true);
    expect(isTerminalRemoteError(notFound, 'file')).toBe(false);
  });

  it('other failures are not terminal', () => {
    expect(isTerminalRemoteError(fakeApiError(500, 'boom'), 'command')).toBe(false);
    expect(
      isTerminalRemoteError(new Error('[http] Request timed out (timeoutSeconds=30)'), 'renew'),
    ).toBe(false);
    expect(isTerminalRemoteError('a string', 'command')).toBe(false);
  });

  it('statusCodeOf reads the status anywhere in the chain', () => {
    expect(statusCodeOf(new Error('outer', { cause: fakeApiError(409, 'conflict') }))).toBe(409);
    expect(statusCodeOf(new Error('plain'))).toBeUndefined();
  });
});
