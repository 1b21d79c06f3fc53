import { describe, expect, it } from 'vitest';
import {
  InvalidArgumentError,
  SandboxFileError,
  SandboxPermissionError,
  isSbxError,
} from '../errors/errors.js';
import { PATH_TRAVERSAL_MESSAGE } from '../paths/path-mapping.js';
import {
  assertDownloadablePath,
  assertSandboxFilePath,
  decodeFileText,
} from './sandbox-file-checks.js';

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('assertSandboxFilePath', () => {
  it('accepts absolute and relative paths without a traversal', () => {
    for (const ok of ['/mnt/user-data/workspace/a.txt', 'relative.txt', '/tmp/..x', '/']) {
      expect(() => assertSandboxFilePath(ok)).not.toThrow();
    }
  });

  it('refuses an empty or non-string path as an invalid argument', () => {
    expect(thrown(() => assertSandboxFilePath(''))).toBeInstanceOf(InvalidArgumentError);
    const notAString = undefined as unknown as string;
    const err = thrown(() => assertSandboxFilePath(notAString));
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as Error).message).toBe('path must be a non-empty string');
  });

  it('refuses `..` segments in both slash forms as a permission error', () => {
    for (const bad of ['/mnt/user-data/../etc/passwd', '..\\secret', 'a/../../b', '..']) {
      const err = thrown(() => assertSandboxFilePath(bad));
      expect(err).toBeInstanceOf(SandboxPermissionError);
      expect((err as SandboxPermissionError).baseMessage).toBe(PATH_TRAVERSAL_MESSAGE);
    }
  });
});

describe('assertDownloadablePath', () => {
  it('allows /mnt/user-data and everything below it', () => {
    for (const ok of ['/mnt/user-data', '/mnt/user-data/outputs/r.csv']) {
      expect(() => assertDownloadablePath(ok)).not.toThrow();
    }
  });

  it('refuses anything else with EACCES on the download operation', () => {
    for (const bad of ['/etc/passwd', '/mnt/user-data-other/x', '/mnt/skills/public/a', 'rel']) {
      const err = thrown(() => assertDownloadablePath(bad));
      expect(err).toBeInstanceOf(SandboxPermissionError);
      expect(err).toMatchObject({ path: bad, operation: 'download', kind: 'EACCES' });
      expect((err as SandboxPermissionError).baseMessage).toBe(
        'Access denied: only files under /mnt/user-data can be downloaded',
      );
    }
  });
});

describe('decodeFileText', () => {
  it('decodes UTF-8 and keeps a BOM', () => {
    const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode('héllo\r\n')]);
    expect(decodeFileText(bytes, '/f')).toBe('\ufeffhéllo\r\n');
    expect(decodeFileText(new Uint8Array(0), '/f')).toBe('');
  });

  it('refuses bytes that are not UTF-8 with EILSEQ, naming the path', () => {
    const err = thrown(() => decodeFileText(new Uint8Array([0x61, 0xff, 0x62]), '/w/bin.dat'));
    expect(err).toBeInstanceOf(SandboxFileError);
    expect(isSbxError(err)).toBe(true);
    expect(err).toMatchObject({ path: '/w/bin.dat', operation: 'read', kind: 'EILSEQ' });
    expect((err as SandboxFileError).baseMessage).toBe('File is not valid UTF-8 text: /w/bin.dat');
    expect((err as Error).cause).toBeInstanceOf(TypeError);
  });
});
