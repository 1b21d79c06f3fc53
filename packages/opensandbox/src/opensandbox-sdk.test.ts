import * as realSdk from '@alibaba-group/opensandbox';
import {
  MissingDependencyError,
  SandboxRuntimeError,
  isSbxError,
  loadProviderClass,
  parseSandboxConfig,
  silentLogger,
} from '@sbx/core';
import type { SandboxProviderClass, SandboxProviderFactory } from '@sbx/core';
import { rejectionOf } from '@sbx/core/testing';
import { describe, expect, it } from 'vitest';
import * as packageExports from './index.js';
import { OpenSandboxProvider, createOpenSandboxProvider } from './opensandbox-provider.js';
import type { OpenSandboxSdk } from './opensandbox-sdk.js';
import { OPENSANDBOX_SDK_PACKAGE, loadOpenSandboxSdk, sdkLoader } from './opensandbox-sdk.js';

// Compile-time: the real SDK module satisfies the port this package is written against, and the
// provider fits the core loader's class and factory shapes (`npm run typecheck` fails otherwise).
const sdkFitsThePort: OpenSandboxSdk = realSdk;
const classFitsTheLoader: SandboxProviderClass = OpenSandboxProvider;
const factoryFitsTheLoader: SandboxProviderFactory = createOpenSandboxProvider;

function moduleNotFound(name: string): Error {
  return Object.assign(new Error(`Cannot find package '${name}' imported from /app/index.js`), {
    code: 'ERR_MODULE_NOT_FOUND',
  });
}

describe('loadOpenSandboxSdk', () => {
  it('imports the installed SDK', async () => {
    const sdk = await loadOpenSandboxSdk();
    expect(sdk.Sandbox).toBe(realSdk.Sandbox);
    expect(sdk.ConnectionConfig).toBe(realSdk.ConnectionConfig);
    expect(sdkFitsThePort.Sandbox).toBe(realSdk.Sandbox);
  });

  it('accepts a CommonJS namespace ({ default: module.exports })', async () => {
    const sdk = await loadOpenSandboxSdk(async () => ({ default: realSdk }));
    expect(sdk.Sandbox).toBe(realSdk.Sandbox);
  });

  it('refuses a module without Sandbox.create and ConnectionConfig', async () => {
    const err = await rejectionOf(loadOpenSandboxSdk(async () => ({ Sandbox: {} })));
    expect(err).toBeInstanceOf(SandboxRuntimeError);
  });
});

describe('sdkLoader', () => {
  it('shares one load between callers and loads again after a failure', async () => {
    let loads = 0;
    let fail = true;
    const load = sdkLoader(async () => {
      loads += 1;
      if (fail) throw new Error('not installed yet');
      return realSdk;
    });
    const first = load();
    expect(load()).toBe(first);
    await rejectionOf(first);
    expect(loads).toBe(1);
    fail = false;
    expect((await load()).Sandbox).toBe(realSdk.Sandbox);
    await load();
    expect(loads).toBe(2);
  });
});

describe('the provider and the optional SDK', () => {
  it('§8.8.163 the SDK is not imported before the first acquire; a missing SDK is an error naming the package', async () => {
    const imported: string[] = [];
    const provider = new OpenSandboxProvider({
      config: { opensandbox: { domain: 'localhost:8080' } },
      logger: silentLogger,
      importer: async (name) => {
        imported.push(name);
        throw moduleNotFound(name);
      },
    });
    expect(imported).toEqual([]);
    const err = await rejectionOf(provider.acquire({ userId: 'u', threadId: 't' }));
    expect(imported).toEqual([OPENSANDBOX_SDK_PACKAGE]);
    expect(err).toBeInstanceOf(MissingDependencyError);
    expect(isSbxError(err) && err.code).toBe('MISSING_DEPENDENCY');
    expect((err as Error).message).toContain('@alibaba-group/opensandbox');
    expect((err as Error).message).toContain('@sbx/opensandbox');
    expect((err as Error).message).toContain('npm install @alibaba-group/opensandbox');
    // Not remembered: installing the SDK later in a long-lived process works.
    await rejectionOf(provider.acquire({ userId: 'u', threadId: 't' }));
    expect(imported).toHaveLength(2);
    await provider.shutdown();
  });
});

describe('package exports', () => {
  it('the default export is the provider class; createOpenSandboxProvider is the factory', () => {
    expect(packageExports.default).toBe(OpenSandboxProvider);
    expect(packageExports.OpenSandboxProvider).toBe(OpenSandboxProvider);
    expect(classFitsTheLoader).toBe(OpenSandboxProvider);
    expect(factoryFitsTheLoader).toBe(createOpenSandboxProvider);
  });

  it('the core provider loader builds it from use: "@sbx/opensandbox" and a parsed configuration', async () => {
    const loaded = await loadProviderClass('@sbx/opensandbox', {
      importer: async () => packageExports,
    });
    expect(loaded.kind).toBe('class');
    expect(loaded.exportName).toBe('default');
    const config = parseSandboxConfig({
      use: '@sbx/opensandbox',
      opensandbox: { domain: 'sandbox.example.com', protocol: 'https', api_key: 'k' },
      replicas: 4,
    });
    const provider = await loaded.create({ config, logger: silentLogger });
    expect(provider).toBeInstanceOf(OpenSandboxProvider);
    expect((provider as OpenSandboxProvider).settings).toMatchObject({
      domain: 'sandbox.example.com',
      protocol: 'https',
      replicas: 4,
    });
    await provider.shutdown();
  });
});
