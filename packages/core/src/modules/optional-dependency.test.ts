import { describe, expect, it } from 'vitest';
import { MissingDependencyError } from '../errors/errors.js';
import {
  interopDefault,
  isModuleNotFoundFor,
  loadOptionalDependency,
  packageNameOf,
} from './optional-dependency.js';

const notFound = (name: string, code = 'ERR_MODULE_NOT_FOUND') =>
  Object.assign(
    new Error(
      `Cannot find package '${name}' imported from /app/node_modules/@sbx/aio/dist/index.js`,
    ),
    {
      code,
    },
  );

/** An importer whose answers are scripted per call, recording what it was asked. */
function scripted(...answers: Array<() => Promise<unknown>>) {
  const calls: string[] = [];
  const importer = (specifier: string) => {
    calls.push(specifier);
    const next = answers.shift();
    if (!next) throw new Error('unexpected import');
    return next();
  };
  return { importer, calls };
}

describe('loadOptionalDependency', () => {
  it('returns the module and imports it once per importer', async () => {
    const mod = { Docker: class {} };
    const { importer, calls } = scripted(async () => mod);
    expect(await loadOptionalDependency('dockerode', '@sbx/aio', importer)).toBe(mod);
    expect(await loadOptionalDependency('dockerode', '@sbx/aio', importer)).toBe(mod);
    expect(calls).toEqual(['dockerode']);
  });

  it('concurrent first uses share one import', async () => {
    let release!: (v: unknown) => void;
    const { importer, calls } = scripted(() => new Promise((r) => (release = r)));
    const a = loadOptionalDependency('e2b', 'x', importer);
    const b = loadOptionalDependency('e2b', 'x', importer);
    release({ ok: true });
    expect(await a).toBe(await b);
    expect(calls).toEqual(['e2b']);
  });

  it('a missing package → MissingDependencyError with installCommand and the loader error as cause', async () => {
    const cause = notFound('dockerode');
    const { importer } = scripted(async () => {
      throw cause;
    });
    const err = await loadOptionalDependency(
      'dockerode',
      '@sbx/aio LocalContainerBackend',
      importer,
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MissingDependencyError);
    expect((err as MissingDependencyError).installCommand).toBe('npm install dockerode');
    expect((err as MissingDependencyError).packageName).toBe('dockerode');
    expect((err as Error).message).toContain('@sbx/aio LocalContainerBackend');
    expect((err as Error).cause).toBe(cause);
  });

  it('CommonJS MODULE_NOT_FOUND and scoped names are recognised too', async () => {
    const { importer } = scripted(async () => {
      throw notFound('@boxlite-ai/boxlite', 'MODULE_NOT_FOUND');
    });
    await expect(
      loadOptionalDependency('@boxlite-ai/boxlite', 'x', importer),
    ).rejects.toBeInstanceOf(MissingDependencyError);
  });

  it('a subpath of a missing package names the package to install', async () => {
    const { importer } = scripted(() => Promise.reject(notFound('@langchain/core')));
    const err = await loadOptionalDependency(
      '@langchain/core/tools',
      '@sbx/langchain',
      importer,
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MissingDependencyError);
    expect((err as MissingDependencyError).installCommand).toBe('npm install @langchain/core');
    expect(packageNameOf('@langchain/core/tools')).toBe('@langchain/core');
    expect(packageNameOf('ai/test')).toBe('ai');
    expect(packageNameOf('e2b')).toBe('e2b');
  });

  it('a missing subpath via the real import() → MissingDependencyError for its package', async () => {
    await expect(
      loadOptionalDependency('@sbx-not-installed/pkg/sub', '@sbx/test'),
    ).rejects.toMatchObject({ installCommand: 'npm install @sbx-not-installed/pkg' });
  });

  it('a missing package via the real import() → MissingDependencyError', async () => {
    await expect(
      loadOptionalDependency('sbx-optional-dep-that-does-not-exist-91c2', 'test'),
    ).rejects.toBeInstanceOf(MissingDependencyError);
  });

  it('an installed package failing with a different error propagates unchanged', async () => {
    const broken = new SyntaxError('Unexpected token in dockerode/lib/x.js');
    const transitive = notFound('ssh2'); // missing inside the installed package: a broken install
    const { importer } = scripted(
      async () => {
        throw broken;
      },
      async () => {
        throw transitive;
      },
    );
    expect(await loadOptionalDependency('dockerode', 'x', importer).catch((e: unknown) => e)).toBe(
      broken,
    );
    expect(await loadOptionalDependency('dockerode', 'x', importer).catch((e: unknown) => e)).toBe(
      transitive,
    );
  });

  it('a failure is not cached: a later call imports again and can succeed', async () => {
    const mod = { ok: 1 };
    const { importer, calls } = scripted(
      async () => {
        throw notFound('e2b');
      },
      async () => mod,
    );
    await expect(loadOptionalDependency('e2b', 'x', importer)).rejects.toBeInstanceOf(
      MissingDependencyError,
    );
    expect(await loadOptionalDependency('e2b', 'x', importer)).toBe(mod);
    expect(calls).toEqual(['e2b', 'e2b']);
  });

  it('an importer that throws synchronously is handled like a rejected import', async () => {
    const importer = () => {
      throw notFound('tenki');
    };
    await expect(loadOptionalDependency('tenki', 'x', importer)).rejects.toBeInstanceOf(
      MissingDependencyError,
    );
  });

  it('caches are per importer', async () => {
    const a = scripted(async () => ({ from: 'a' }));
    const b = scripted(async () => ({ from: 'b' }));
    expect(await loadOptionalDependency('same', 'x', a.importer)).toEqual({ from: 'a' });
    expect(await loadOptionalDependency('same', 'x', b.importer)).toEqual({ from: 'b' });
  });
});

describe('isModuleNotFoundFor', () => {
  it('matches only the named package with a module-not-found code', () => {
    expect(isModuleNotFoundFor(notFound('x'), 'x')).toBe(true);
    expect(isModuleNotFoundFor(notFound('x-extra'), 'x')).toBe(false);
    expect(isModuleNotFoundFor(new Error("Cannot find package 'x'"), 'x')).toBe(false);
    expect(isModuleNotFoundFor('x', 'x')).toBe(false);
  });
});

describe('interopDefault', () => {
  it('prefers a truthy default export, else the namespace', () => {
    const fn = () => 1;
    expect(interopDefault({ default: fn, other: 2 })).toBe(fn);
    const ns = { named: 1 };
    expect(interopDefault(ns)).toBe(ns);
    const nullDefault = { default: null, named: 1 };
    expect(interopDefault(nullDefault)).toBe(nullDefault);
  });
});
