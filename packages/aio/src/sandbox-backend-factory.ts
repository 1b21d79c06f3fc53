import type { Logger } from '@sbx/core';
import type { AioSettings } from './aio-provider-config.js';
import { LocalContainerBackend } from './local-container-backend.js';
import { RemoteSandboxBackend } from './remote-sandbox-backend.js';
import type { SandboxBackend } from './sandbox-backend.js';

/** The default backend of the settings: a provisioner when `provisioner_url` is set, else Docker. */
export function buildSandboxBackend(s: AioSettings, logger: Logger): SandboxBackend {
  // Readiness is the provider's: an unready container must be stopped under the ownership
  // rules (another instance may have discovered it meanwhile), not by the backend directly.
  if (s.provisionerUrl) {
    return new RemoteSandboxBackend({
      provisionerUrl: s.provisionerUrl,
      ...(s.provisionerApiKey ? { apiKey: s.provisionerApiKey } : {}),
      skillsRoot: s.skillsRoot,
      readyTimeoutMs: 0,
      // A Pod still starting (an image pull) gets the readiness budget, not a verdict of dead.
      startingWaitMs: s.readyTimeoutMs,
      logger,
    });
  }
  return new LocalContainerBackend({
    image: s.image,
    basePort: s.basePort,
    containerPrefix: s.containerPrefix,
    mounts: s.mounts,
    // The image enforces the key sbx sends (SANDBOX_API_KEY, agent-infra/sandbox).
    environment: s.apiKey ? { ...s.environment, SANDBOX_API_KEY: s.apiKey } : s.environment,
    ...(s.apiKey ? { apiKey: s.apiKey } : {}),
    headers: s.headers,
    resources: s.resources,
    security: s.security,
    network: s.network,
    ...(s.sandboxHost ? { sandboxHost: s.sandboxHost } : {}),
    ...(s.bindHost ? { bindHost: s.bindHost } : {}),
    skillsRoot: s.skillsRoot,
    readyTimeoutMs: 0,
    ...(s.stopTimeoutMs !== undefined ? { stopTimeoutMs: s.stopTimeoutMs } : {}),
    ...(s.stopGraceSeconds !== undefined ? { stopGraceSeconds: s.stopGraceSeconds } : {}),
    logger,
  });
}
