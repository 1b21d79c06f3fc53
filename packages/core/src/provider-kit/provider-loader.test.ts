import { describe, expect, it } from 'vitest';
import { parseSandboxConfig } from '../config/config-loader.js';
import { MissingDependencyError, ProviderLoadError } from '../errors/errors.js';
import type { ModuleImporter, SandboxProviderInit } from './provider-loader.js';
import { loadProviderClass } from './provider-loader.js';
import { parseProviderSpecifier } from '../modules/provider-specifier.js';
import type { Sandbox } from '../contract/sandbox.js';
import { SandboxProvider } from '../contract/sandbox-provider.js';

const config = parseSandboxConfig({}, { env: {}, cwd: '/' });
const init: SandboxProviderInit = { config };

class FakeProvider extends SandboxProvider {
  readonly init: SandboxProviderInit;
  constructor(i: SandboxProviderInit) {
    super();
    this.init = i;
  }
  async acquire(): Promise<string> {
    return 'id';
  }
  get(): Sandbox | undefined {
    return undefined;
  }
  async release(): Promise<void> {}
}
class OtherProvider extends FakeProvider {}
class NotAProvider {
  hello(): string {
    return 'hi';
  }
}

/** Serves modules from a table; an absent name fails like Node's loader does. */
function importerOf(modules: Record<string, unknown>): ModuleImporter & { calls: string[] } {
  const calls: string[] = [];
  const importer = async (specifier: string) => {
    calls.push(specifier);
    if (specifier in modules) return modules[specifier];
    throw Object.assign(
      new Error(`Cannot find package '${specifier}' imported from /app/index.js`),
      {
        code: 'ERR_MODULE_NOT_FOUND',
      },
    );
  };
  return Object.assign(importer, { calls });
}

async function loadError(specifier: string, importer?: ModuleImporter): Promise<ProviderLoadError> {
  const err = await loadProviderClass(specifier, { importer }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ProviderLoadError);
  expect((err as ProviderLoadError).code).toBe('PROVIDER_LOAD');
  expect((err as ProviderLoadError).specifier).toBe(specifier);
  return err as ProviderLoadError;
}

describe('parseProviderSpecifier', () => {
  it('splits package, subpath and export', () => {
    expect(parseProviderSpecifier('@sbx/aio#AioSandboxProvider')).toEqual({
      specifier: '@sbx/aio#AioSandboxProvider',
      moduleName: '@sbx/aio',
      packageName: '@sbx/aio',
      exportName: 'AioSandboxProvider',
    });
    expect(parseProviderSpecifier('pkg/sub/path#X')).toMatchObject({
      moduleName: 'pkg/sub/path',
      packageName: 'pkg',
    });
    expect(parseProviderSpecifier('@a/b/c')).toMatchObject({
      packageName: '@a/b',
      exportName: undefined,
    });
    expect(parseProviderSpecifier('deerflow.sandbox.local:LocalSandboxProvider')).toBeUndefined();
  });
});

describe('loadProviderClass', () => {
  it('uses the default export when it is a provider class, and constructs it with the init', async () => {
    const importer = importerOf({ '@sbx/fake': { default: FakeProvider } });
    const loaded = await loadProviderClass('@sbx/fake', { importer });
    expect(loaded).toMatchObject({
      kind: 'class',
      exportName: 'default',
      packageName: '@sbx/fake',
      target: FakeProvider,
    });
    const provider = await loaded.create(init);
    expect(provider).toBeInstanceOf(FakeProvider);
    expect((provider as FakeProvider).init.config).toBe(config);
    expect(importer.calls).toEqual(['@sbx/fake']);
  });

  it('uses the export named after # (the default is ignored then)', async () => {
    const importer = importerOf({ '@sbx/fake': { default: FakeProvider, OtherProvider } });
    const loaded = await loadProviderClass('@sbx/fake#OtherProvider', { importer });
    expect(loaded.exportName).toBe('OtherProvider');
    expect(await loaded.create(init)).toBeInstanceOf(OtherProvider);
  });

  it('imports a subpath module and reports the package name', async () => {
    const importer = importerOf({ 'pkg/providers': { FakeProvider } });
    const loaded = await loadProviderClass('pkg/providers#FakeProvider', { importer });
    expect(importer.calls).toEqual(['pkg/providers']);
    expect(loaded.packageName).toBe('pkg');
  });

  it('without a default export uses a createProvider factory (sync or async)', async () => {
    const made = new FakeProvider(init);
    const seen: SandboxProviderInit[] = [];
    const importer = importerOf({
      sync: { createProvider: (i: SandboxProviderInit) => (seen.push(i), made), FakeProvider },
      async: { createProvider: async () => made },
    });
    const loaded = await loadProviderClass('sync', { importer });
    expect(loaded).toMatchObject({ kind: 'factory', exportName: 'createProvider' });
    expect(await loaded.create(init)).toBe(made);
    expect(seen).toEqual([init]);
    expect(await (await loadProviderClass('async', { importer })).create(init)).toBe(made);
  });

  it('a default-export factory function is a factory', async () => {
    const made = new FakeProvider(init);
    const importer = importerOf({ f: { default: () => made } });
    const loaded = await loadProviderClass('f', { importer });
    expect(loaded.kind).toBe('factory');
    expect(await loaded.create(init)).toBe(made);
  });

  it('otherwise uses the single SandboxProvider subclass export', async () => {
    const importer = importerOf({
      one: { FakeProvider, NotAProvider, helper: () => 1, VERSION: '1' },
    });
    const loaded = await loadProviderClass('one', { importer });
    expect(loaded).toMatchObject({ kind: 'class', exportName: 'FakeProvider' });
  });

  it('refuses to guess between several provider exports', async () => {
    const importer = importerOf({ two: { FakeProvider, OtherProvider } });
    const err = await loadError('two', importer);
    expect(err.message).toMatch(/several sandbox providers \(FakeProvider, OtherProvider\)/);
    expect(err.message).toContain('two#FakeProvider');
  });

  it('counts one class re-exported under two names once', async () => {
    const importer = importerOf({ alias: { FakeProvider, Alias: FakeProvider } });
    expect((await loadProviderClass('alias', { importer })).target).toBe(FakeProvider);
  });

  it('reads CommonJS modules (exports under default)', async () => {
    const importer = importerOf({ cjs: { default: { FakeProvider } } });
    expect((await loadProviderClass('cjs', { importer })).target).toBe(FakeProvider);
    expect((await loadProviderClass('cjs#FakeProvider', { importer })).target).toBe(FakeProvider);
  });

  it('accepts a structurally complete provider class from another copy of @sbx/core', async () => {
    class Foreign {
      async acquire(): Promise<string> {
        return 'x';
      }
      get(): undefined {
        return undefined;
      }
      async release(): Promise<void> {}
    }
    const importer = importerOf({ foreign: { default: Foreign } });
    const loaded = await loadProviderClass('foreign', { importer });
    expect(loaded.kind).toBe('class');
    expect(await loaded.create(init)).toBeInstanceOf(Foreign);
  });

  it('unknown package → ProviderLoadError naming it with an install hint', async () => {
    const err = await loadError('@sbx/e2b', importerOf({}));
    expect(err.message).toBe(
      'Sandbox provider package "@sbx/e2b" is not installed. Install it with: npm install @sbx/e2b',
    );
    expect((err.cause as { code?: string }).code).toBe('ERR_MODULE_NOT_FOUND');
  });

  it('unknown package via the real import() → ProviderLoadError with install hint', async () => {
    const err = await loadError('sbx-provider-that-does-not-exist-7f3a');
    expect(err.message).toContain('npm install sbx-provider-that-does-not-exist-7f3a');
  });

  it('a real installed package without a provider is rejected, not guessed', async () => {
    const err = await loadError('yaml');
    expect(err.message).toMatch(
      /no default export, no "createProvider" factory and no SandboxProvider subclass/,
    );
  });

  it('missing export → ProviderLoadError naming export and package', async () => {
    const err = await loadError('@sbx/fake#Nope', importerOf({ '@sbx/fake': { FakeProvider } }));
    expect(err.message).toBe('Package "@sbx/fake" does not export "Nope"');
  });

  it('an export that is not a provider class or factory → ProviderLoadError', async () => {
    const importer = importerOf({
      m: { NotAProvider, obj: {}, str: 'x', SandboxProvider, default: NotAProvider },
    });
    for (const spec of ['m#NotAProvider', 'm#obj', 'm#str', 'm']) {
      expect((await loadError(spec, importer)).message).toMatch(
        /not a SandboxProvider subclass or a factory/,
      );
    }
    expect((await loadError('m#SandboxProvider', importer)).message).toMatch(
      /abstract SandboxProvider/,
    );
  });

  it('a factory that returns something else fails at create() with ProviderLoadError', async () => {
    const loaded = await loadProviderClass('f', {
      importer: importerOf({ f: { createProvider: () => ({}) } }),
    });
    const err = await loaded.create(init).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderLoadError);
    expect((err as Error).message).toMatch(/returned object, not a SandboxProvider/);
  });

  it('an installed package failing to import for another reason is wrapped with its cause', async () => {
    const boom = new TypeError('top-level code failed');
    const err = await loadError('broken', async () => {
      throw boom;
    });
    expect(err.message).toContain(
      'Failed to import sandbox provider package "broken": top-level code failed',
    );
    expect(err.cause).toBe(boom);
  });

  it('a missing transitive module inside an installed package is not reported as "not installed"', async () => {
    const inner = Object.assign(
      new Error("Cannot find package 'left-pad' imported from /node_modules/broken/index.js"),
      {
        code: 'ERR_MODULE_NOT_FOUND',
      },
    );
    const err = await loadError('broken', async () => {
      throw inner;
    });
    expect(err.message).toMatch(/^Failed to import/);
    expect(err.cause).toBe(inner);
  });

  it('SbxErrors raised while importing pass through unchanged', async () => {
    const missing = new MissingDependencyError('dockerode', '@sbx/aio');
    const err = await loadProviderClass('x', {
      importer: async () => {
        throw missing;
      },
    }).catch((e: unknown) => e);
    expect(err).toBe(missing);
  });

  it('a malformed specifier → ProviderLoadError before importing', async () => {
    const importer = importerOf({});
    await loadError('not a package', importer);
    await loadError('pkg#', importer);
    expect(importer.calls).toEqual([]);
  });
});
