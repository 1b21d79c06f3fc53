import { parseSandboxConfig } from '@sbx/core';
import type { SandboxConfig } from '@sbx/core';
import { ManualClock, recordingLogger } from '@sbx/core/testing';
import type { RecordingLogger } from '@sbx/core/testing';
import { TenkiSandboxProvider } from '../tenki-provider.js';
import type { TenkiProviderOptions } from '../tenki-provider.js';
import type { FakeTenkiClientOptions } from './fake-tenki-client.js';
import { FakeTenkiClient } from './fake-tenki-client.js';

export function tenkiConfig(section: Record<string, unknown> = {}): SandboxConfig {
  return parseSandboxConfig({ use: '@sbx/tenki', ...section }, { env: {}, cwd: '/' });
}

export interface Harness {
  provider: TenkiSandboxProvider;
  client: FakeTenkiClient;
  clock: ManualClock;
  logger: RecordingLogger;
  dispose(): Promise<void>;
}

export function harness(
  section: Record<string, unknown> = {},
  extra: Partial<TenkiProviderOptions> = {},
  clientOptions: FakeTenkiClientOptions = {},
): Harness {
  const client = new FakeTenkiClient(clientOptions);
  const clock = new ManualClock(1_000_000);
  const logger = recordingLogger();
  const provider = new TenkiSandboxProvider({
    config: tenkiConfig(section),
    client,
    clock,
    logger,
    ...extra,
  });
  return {
    provider,
    client,
    clock,
    logger,
    async dispose() {
      await provider.shutdown();
      await client.dispose();
    },
  };
}
