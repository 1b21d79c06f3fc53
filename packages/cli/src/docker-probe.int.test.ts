import { requireService } from '@sbx/core/testing';
import { describe, expect, it } from 'vitest';
import { dockerEndpointFrom, dockerImagePresent, dockerVersion } from './docker-probe.js';

const address = await requireService('docker');

describe.skipIf(!address)('Docker probes against the real daemon', () => {
  it('reads the engine version and answers for an image that does not exist', async () => {
    const endpoint = dockerEndpointFrom({ DOCKER_HOST: address });
    const signal = AbortSignal.timeout(10_000);
    expect(await dockerVersion(endpoint, signal)).toMatch(/^\d+\.\d+/);
    expect(await dockerImagePresent(endpoint, 'sbx-cli-test/absent:never', signal)).toBe(false);
  });
});
