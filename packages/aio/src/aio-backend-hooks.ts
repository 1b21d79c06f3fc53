import { errorMessage } from '@sbx/core';
import type { Logger, Sandbox } from '@sbx/core';
import { aioRequestHeaders } from './aio-http.js';
import { AioSandbox } from './aio-sandbox.js';
import type { AioSettings } from './aio-provider-config.js';
import { waitForSandboxReady } from './readiness.js';
import type { SandboxBackend, SandboxHealth } from './sandbox-backend.js';
import type { SandboxInfo } from './sandbox-info.js';

/** Unknown is not dead: a failed check keeps the sandbox (the next check corrects it). */
export async function checkSandboxHealth(
  backend: SandboxBackend,
  info: SandboxInfo,
  logger: Logger,
): Promise<SandboxHealth> {
  try {
    return await backend.checkHealth(info);
  } catch (err) {
    logger.warn(`Could not check the health of sandbox ${info.sandboxId}; keeping it`, {
      error: errorMessage(err),
    });
    return 'unknown';
  }
}

/** Polls `GET /v1/sandbox` for `ready_timeout_seconds`. */
export function defaultReadiness(
  backend: SandboxBackend,
  settings: AioSettings,
  info: SandboxInfo,
  logger: Logger,
): Promise<boolean> {
  return waitForSandboxReady(info.sandboxUrl, {
    timeoutMs: settings.readyTimeoutMs,
    headers: aioRequestHeaders(settings),
    // A local container that exited need not cost the whole budget. (A provisioner reports
    // a starting Pod as not Running, so the check would end its wait too early.)
    ...(backend.kind === 'local'
      ? { stillViable: async () => (await checkSandboxHealth(backend, info, logger)) !== 'dead' }
      : {}),
  });
}

/** A client that fails to close is logged, never thrown: the caller is tearing down. */
export async function closeSandboxClient(
  client: Sandbox,
  id: string,
  during: string,
  logger: Logger,
): Promise<void> {
  try {
    await client.close();
  } catch (err) {
    logger.warn(`Error closing sandbox ${id} during ${during}: ${errorMessage(err)}`);
  }
}

/** The default client of a sandbox: an `AioSandbox` on its URL, with the configured key. */
export function aioClientFactory(
  settings: AioSettings,
  logger: Logger,
): (info: SandboxInfo) => Sandbox {
  return (info) =>
    new AioSandbox(info.sandboxId, {
      baseUrl: info.sandboxUrl,
      logger,
      ...(settings.apiKey ? { apiKey: settings.apiKey } : {}),
      headers: settings.headers,
    });
}

/** Shutdown's last steps: a resource that fails to close is logged, never thrown. */
export async function closeQuietly(
  what: string,
  close: () => Promise<void>,
  logger: Logger,
): Promise<void> {
  try {
    await close();
  } catch (err) {
    logger.warn(`Could not close ${what}`, { error: errorMessage(err) });
  }
}
