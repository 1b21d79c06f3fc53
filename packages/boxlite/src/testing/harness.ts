import { parseSandboxConfig } from '@sbx/core';
import type { SandboxConfig } from '@sbx/core';
import { ManualClock, recordingLogger } from '@sbx/core/testing';
import type { RecordingLogger } from '@sbx/core/testing';
import { BoxliteProvider } from '../boxlite-provider.js';
import type { BoxliteProviderOptions } from '../boxlite-provider.js';
import type { FakeBoxliteRuntimeOptions } from './fake-boxlite-runtime.js';
import { FakeBoxliteRuntime } from './fake-boxlite-runtime.js';

export function boxliteConfig(section: Record<string, unknown> = {}): SandboxConfig {
  return parseSandboxConfig({ use: '@sbx/boxlite', ...section }, { env: {}, cwd: '/' });
}

export interface Harness {
  provider: BoxliteProvider;
  runtime: FakeBoxliteRuntime;
  clock: ManualClock;
  logger: RecordingLogger;
  dispose(): Promise<void>;
}

/** A provider on a fake runtime and a manual clock. */
export function harness(
  section: Record<string, unknown> = {},
  extra: Partial<BoxliteProviderOptions> = {},
  runtimeOptions: FakeBoxliteRuntimeOptions = {},
): Harness {
  const runtime = new FakeBoxliteRuntime(runtimeOptions);
  const clock = new ManualClock(1_000_000);
  const logger = recordingLogger();
  const provider = new BoxliteProvider({
    config: boxliteConfig(section),
    runtime,
    clock,
    logger,
    ...extra,
  });
  return {
    provider,
    runtime,
    clock,
    logger,
    async dispose() {
      await provider.shutdown();
      await runtime.dispose();
    },
  };
}
