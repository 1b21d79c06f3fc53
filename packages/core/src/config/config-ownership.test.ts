import { describe, expect, it } from 'vitest';
import { parseSandboxConfig } from './config-loader.js';
import { resolveOwnershipConfig } from './config-ownership.js';
import { ConfigError } from '../errors/errors.js';

const cfg = (ownership?: Record<string, unknown>) =>
  parseSandboxConfig(ownership === undefined ? {} : { ownership }, { env: {}, cwd: '/' });

describe('resolveOwnershipConfig (aio-ownership §6.6)', () => {
  it('no section and no variables → memory with the default timing', () => {
    expect(resolveOwnershipConfig(cfg(), {})).toEqual({
      type: 'memory',
      redisUrl: undefined,
      renewalIntervalSeconds: 30,
      ttlMultiplier: 4,
      keyPrefix: 'sbx',
      leaseTtlSeconds: 120,
      source: 'default',
      redisUrlSource: undefined,
    });
    expect(resolveOwnershipConfig(undefined, {}).type).toBe('memory');
  });

  it('an explicit memory section beats every variable', () => {
    const r = resolveOwnershipConfig(cfg({ type: 'memory' }), {
      SBX_OWNERSHIP_REDIS_URL: 'redis://a:1',
      DEER_FLOW_STREAM_BRIDGE_REDIS_URL: 'redis://b:1',
    });
    expect(r).toMatchObject({ type: 'memory', source: 'config', redisUrl: undefined });
  });

  it('an explicit redis section keeps its URL and timing', () => {
    const r = resolveOwnershipConfig(
      cfg({
        type: 'redis',
        redis_url: 'redis://cfg:6379/2',
        renewal_interval_seconds: 10,
        ttl_multiplier: 3,
        key_prefix: 'deerflow:sandbox:owner',
      }),
      { SBX_OWNERSHIP_REDIS_URL: 'redis://env:1' },
    );
    expect(r).toMatchObject({
      type: 'redis',
      redisUrl: 'redis://cfg:6379/2',
      redisUrlSource: 'config',
      leaseTtlSeconds: 30,
      keyPrefix: 'deerflow:sandbox:owner',
    });
  });

  it('redis without a URL follows the chain: SBX → DEER_FLOW ownership → DEER_FLOW bridge → REDIS_URL → localhost', () => {
    const redis = cfg({ type: 'redis' });
    const chain: Array<[Record<string, string>, string, string]> = [
      [
        {
          SBX_OWNERSHIP_REDIS_URL: 'redis://s:1',
          DEER_FLOW_SANDBOX_OWNERSHIP_REDIS_URL: 'redis://d:1',
        },
        'redis://s:1',
        'env:SBX_OWNERSHIP_REDIS_URL',
      ],
      [
        {
          DEER_FLOW_SANDBOX_OWNERSHIP_REDIS_URL: 'redis://d:1',
          DEER_FLOW_STREAM_BRIDGE_REDIS_URL: 'redis://b:1',
        },
        'redis://d:1',
        'env:DEER_FLOW_SANDBOX_OWNERSHIP_REDIS_URL',
      ],
      [
        { DEER_FLOW_STREAM_BRIDGE_REDIS_URL: 'redis://b:1', REDIS_URL: 'redis://r:1' },
        'redis://b:1',
        'env:DEER_FLOW_STREAM_BRIDGE_REDIS_URL',
      ],
      [{ REDIS_URL: 'redis://r:1' }, 'redis://r:1', 'env:REDIS_URL'],
      [{}, 'redis://localhost:6379/0', 'default'],
    ];
    for (const [env, url, source] of chain) {
      expect(resolveOwnershipConfig(redis, env)).toMatchObject({
        type: 'redis',
        redisUrl: url,
        redisUrlSource: source,
        source: 'config',
      });
    }
  });

  it('SBX_OWNERSHIP_REDIS_URL set → redis (inferred)', () => {
    expect(resolveOwnershipConfig(cfg(), { SBX_OWNERSHIP_REDIS_URL: 'redis://s:1' })).toMatchObject(
      {
        type: 'redis',
        redisUrl: 'redis://s:1',
        source: 'env:SBX_OWNERSHIP_REDIS_URL',
      },
    );
  });

  it('either reference variable set → redis; a set stream-bridge variable proves multi-instance', () => {
    expect(
      resolveOwnershipConfig(cfg(), { DEER_FLOW_SANDBOX_OWNERSHIP_REDIS_URL: 'redis://d:1' }),
    ).toMatchObject({
      type: 'redis',
      redisUrl: 'redis://d:1',
      source: 'env:DEER_FLOW_SANDBOX_OWNERSHIP_REDIS_URL',
    });
    expect(
      resolveOwnershipConfig(cfg(), { DEER_FLOW_STREAM_BRIDGE_REDIS_URL: 'redis://b:1' }),
    ).toMatchObject({
      type: 'redis',
      redisUrl: 'redis://b:1',
      source: 'env:DEER_FLOW_STREAM_BRIDGE_REDIS_URL',
    });
  });

  it('SBX variable takes precedence over reference ones for inference and URL', () => {
    expect(
      resolveOwnershipConfig(cfg(), {
        DEER_FLOW_STREAM_BRIDGE_REDIS_URL: 'redis://b:1',
        SBX_OWNERSHIP_REDIS_URL: 'redis://s:1',
      }),
    ).toMatchObject({ redisUrl: 'redis://s:1', source: 'env:SBX_OWNERSHIP_REDIS_URL' });
  });

  it('REDIS_URL alone and empty variables imply nothing', () => {
    expect(resolveOwnershipConfig(cfg(), { REDIS_URL: 'redis://r:1' }).type).toBe('memory');
    expect(
      resolveOwnershipConfig(cfg(), {
        SBX_OWNERSHIP_REDIS_URL: '',
        DEER_FLOW_STREAM_BRIDGE_REDIS_URL: ' ',
      }).type,
    ).toBe('memory');
  });

  it('a host redis stream bridge implies redis, using its URL first; a memory bridge implies nothing', () => {
    expect(
      resolveOwnershipConfig(
        cfg(),
        { SBX_OWNERSHIP_REDIS_URL: 'redis://s:1' },
        { streamBridge: { type: 'redis', redisUrl: 'redis://bridge:1' } },
      ),
    ).toMatchObject({
      type: 'redis',
      redisUrl: 'redis://bridge:1',
      source: 'stream-bridge',
      redisUrlSource: 'stream-bridge',
    });
    expect(
      resolveOwnershipConfig(
        cfg(),
        { REDIS_URL: 'redis://r:1' },
        { streamBridge: { type: 'redis' } },
      ),
    ).toMatchObject({
      type: 'redis',
      redisUrl: 'redis://r:1',
      source: 'stream-bridge',
    });
    expect(resolveOwnershipConfig(cfg(), {}, { streamBridge: { type: 'memory' } }).type).toBe(
      'memory',
    );
  });

  it('a variable that is not a Redis URL is a ConfigError naming it', () => {
    let err: unknown;
    try {
      resolveOwnershipConfig(cfg(), { SBX_OWNERSHIP_REDIS_URL: 'localhost:6379' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues[0]?.path).toBe('$SBX_OWNERSHIP_REDIS_URL');
  });

  it('the result is frozen', () => {
    expect(Object.isFrozen(resolveOwnershipConfig(cfg(), {}))).toBe(true);
  });
});
