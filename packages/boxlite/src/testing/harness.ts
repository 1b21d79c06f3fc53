import { parseSandboxConfig } from '@sbx/core';
import type { Logger, SandboxConfig } from '@sbx/core';
import { ManualClock } from '@sbx/core/testing';
import { BoxliteProvider } from '../boxlite-provider.js';
import type { BoxliteProviderOptions } from '../boxlite-provider.js';
import type { FakeBoxliteRuntimeOptions } from './fake-boxlite-runtime.js';
import { FakeBoxliteRuntime } from './fake-boxlite-runtime.js';

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string;
  fields: Record<string, unknown> | undefined;
}

/** A logger that remembers what it was told. */
export function recordingLogger(): Logger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at =
    (level: LogLine['level']) =>
    (msg: string, fields?: Record<string, unknown>): void => {
      lines.push({ level, msg, fields });
    };
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

export function boxliteConfig(section: Record<string, unknown> = {}): SandboxConfig {
  return parseSandboxConfig({ use: '@sbx/boxlite', ...section }, { env: {}, cwd: '/' });
}

export interface Harness {
  provider: BoxliteProvider;
  runtime: FakeBoxliteRuntime;
  clock: ManualClock;
  logger: ReturnType<typeof recordingLogger>;
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
