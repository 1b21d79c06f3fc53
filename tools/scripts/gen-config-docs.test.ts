import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { listSandboxConfigKeys, sandboxConfigJsonSchema } from '../../packages/core/src/index.js';
import { REFERENCE_FLAT_PROVIDER_KEYS } from '../../packages/core/src/internal.js';
import { packageEntryName } from '../../docs/typedoc-package-names.mjs';
import { REFERENCE_MD, SCHEMA_JSON, renderReference, renderSchema } from './gen-config-docs.mjs';

const key = (over: Record<string, unknown>) => ({
  path: 'sandbox.x',
  type: 'string',
  required: false,
  hasDefault: false,
  default: undefined,
  constraints: [],
  open: false,
  description: '',
  ...over,
});

describe('renderReference', () => {
  it('renders one row per key, escaping pipes and marking required keys', () => {
    const md = renderReference(
      [
        key({ path: 'sandbox.mode', type: '"a" | "b"', hasDefault: true, default: 'a' }),
        key({ path: 'sandbox.list[].name', required: true, constraints: ['non-empty'] }),
        key({
          path: 'sandbox.n',
          type: 'integer',
          hasDefault: true,
          default: 0,
          constraints: ['> 0', '<= 9'],
        }),
        key({ path: 'sandbox.block', type: 'mapping', hasDefault: true, default: { k: 1 } }),
        key({ path: 'sandbox.aio', type: 'open mapping', open: true, description: 'one\ntwo' }),
      ],
      { e2b: ['api_key', 'template'] },
    );
    const rows = md.split('\n').filter((l) => l.startsWith('| `sandbox.'));
    expect(rows).toEqual([
      '| `sandbox.mode` | "a" \\| "b" | `a` |  |  |',
      '| `sandbox.list[].name` | string | **required** | non-empty |  |',
      '| `sandbox.n` | integer | `0` | > 0, <= 9 |  |',
      '| `sandbox.block` | mapping | `{"k":1}` |  |  |',
      '| `sandbox.aio` | open mapping |  |  | one two |',
      '| `sandbox.e2b` | `api_key`, `template` |',
    ]);
    expect(md).toContain('Do not edit');
  });
});

describe('the committed configuration reference', () => {
  // The same comparison as `gen-config-docs.mjs --check`, against core's source instead of its
  // build, so a schema change without regenerated docs also fails the unit tests.
  it('matches the schema', async () => {
    expect(await readFile(REFERENCE_MD, 'utf8')).toBe(
      renderReference(listSandboxConfigKeys(), REFERENCE_FLAT_PROVIDER_KEYS),
    );
    expect(await readFile(SCHEMA_JSON, 'utf8')).toBe(await renderSchema(sandboxConfigJsonSchema()));
  });
});

describe('TypeDoc module names', () => {
  it('are the package entries users import', () => {
    expect(packageEntryName('aio/src')).toBe('@sbx/aio');
    expect(packageEntryName('ownership-redis/src')).toBe('@sbx/ownership-redis');
    expect(packageEntryName('core/src/testing')).toBe('@sbx/core/testing');
    expect(packageEntryName('something else')).toBe('something else');
  });
});
