import type * as BoxliteSdk from '@boxlite-ai/boxlite';
import type { Boxlite } from '@boxlite-ai/boxlite';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { SdkBox, SdkModule, SdkRuntime } from './sdk-runtime.js';
import { BOXLITE_SDK_PACKAGE } from './sdk-runtime.js';

/*
 * `sdk-runtime.ts` restates the SDK surface it calls so this package's types do not need the SDK.
 * These checks hold that restatement to the SDK's own declarations (at type-check time) and to the
 * installed module (at run time), so an SDK change that breaks the adapter fails here.
 */
describe('the BoxLite SDK surface the runtime adapter relies on', () => {
  it('matches the declarations of @boxlite-ai/boxlite', () => {
    expectTypeOf<Boxlite>().toExtend<SdkRuntime>();
    expectTypeOf<Awaited<ReturnType<Boxlite['create']>>>().toExtend<SdkBox>();
    expectTypeOf<typeof BoxliteSdk>().toExtend<SdkModule>();
  });

  it('is what the installed module exports', async () => {
    const mod = (await import(BOXLITE_SDK_PACKAGE)) as Partial<SdkModule>;
    expect(typeof mod.JsBoxlite).toBe('function');
    expect(typeof mod.JsBoxlite?.withDefaultConfig).toBe('function');
    const proto = mod.JsBoxlite?.prototype as Record<string, unknown> | undefined;
    for (const method of ['create', 'listInfo', 'get', 'close']) {
      expect(typeof proto?.[method], method).toBe('function');
    }
  });
});
