import type { OpenSandboxSettings } from './opensandbox-config.js';
import type { OpenSandboxIdentity } from './opensandbox-provider-types.js';
import {
  OPENSANDBOX_METADATA,
  OPENSANDBOX_PROVIDER_TAG_VALUE,
} from './opensandbox-provider-types.js';
import type {
  OpenSandboxConnectionConfig,
  OpenSandboxCreateOptions,
  OpenSandboxSdk,
} from './opensandbox-sdk.js';

/**
 * A fresh connection configuration: the SDK gives each configuration its own HTTP agent, so
 * closing one sandbox's transport never cuts off another's.
 */
export function connectionConfigFor(
  sdk: OpenSandboxSdk,
  s: OpenSandboxSettings,
): OpenSandboxConnectionConfig {
  return new sdk.ConnectionConfig({
    ...(s.apiKey === undefined ? {} : { apiKey: s.apiKey }),
    ...(s.domain === undefined ? {} : { domain: s.domain }),
    protocol: s.protocol,
    requestTimeoutSeconds: s.requestTimeoutSeconds,
    useServerProxy: s.useServerProxy,
    disableMetrics: s.disableMetrics,
  });
}

/**
 * What a new remote is created with (all but its connection): the image and resources of the
 * acquire's spec, the configured environment, and sbx's tags over the spec's labels.
 */
export function remoteCreateOptions(
  s: OpenSandboxSettings,
  identity: OpenSandboxIdentity | undefined,
): {
  options: Omit<OpenSandboxCreateOptions, 'connectionConfig'>;
  environment: Record<string, string>;
} {
  const metadata: Record<string, string> = {
    // An acquire's labels under sbx's own tags, which find and own the sandbox.
    ...(identity?.labels ?? {}),
    [OPENSANDBOX_METADATA.provider]: OPENSANDBOX_PROVIDER_TAG_VALUE,
  };
  if (identity !== undefined) {
    metadata[OPENSANDBOX_METADATA.thread] = identity.threadId;
    metadata[OPENSANDBOX_METADATA.user] = identity.userId;
  }
  const environment = { ...s.environment };
  const resources = identity?.spec?.resources;
  const resource: Record<string, string> = {
    ...(resources?.cpus !== undefined ? { cpu: String(resources.cpus) } : {}),
    ...(resources?.memoryMb !== undefined ? { memory: `${resources.memoryMb}Mi` } : {}),
  };
  return {
    environment,
    options: {
      image: identity?.spec?.image ?? s.image,
      ...(Object.keys(resource).length > 0 ? { resource } : {}),
      ...(Object.keys(environment).length > 0 ? { env: environment } : {}),
      metadata,
      timeoutSeconds: s.lifetimeSeconds,
      readyTimeoutSeconds: s.readyTimeoutSeconds,
    },
  };
}
