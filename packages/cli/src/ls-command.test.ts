import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SandboxSummary } from '@sbx/core';
import { importerWith, memoryProviderClass, sbx, tempDir } from './test-support.js';

describe('sbx ls', () => {
  let home: { dir: string; remove: () => Promise<void> };
  const env = () => ({ SBX_HOME: home.dir });

  beforeEach(async () => {
    home = await tempDir('ls');
  });
  afterEach(async () => {
    await home.remove();
  });

  it('shows every thread acquired under the data directory, across invocations', async () => {
    await sbx(['exec', '--thread', 't1', '--', 'true'], { env: env() });
    await sbx(['exec', '--user', 'bob', '--thread', 't2', '--', 'true'], { env: env() });
    const run = await sbx(['ls'], { env: env() });
    expect(run.code).toBe(0);
    const [header, ...rows] = run.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^ID\s+USER\s+THREAD\s+STATE\s+UPDATED\s+LOCATION$/);
    expect(rows.map((r) => r.split(/\s+/).slice(0, 3))).toEqual([
      ['local:bob:t2', 'bob', 't2'],
      ['local:default:t1', 'default', 't1'],
    ]);
  });

  it('answers as ps too, and as JSON', async () => {
    await sbx(['exec', '--thread', 't1', '--', 'true'], { env: env() });
    const run = await sbx(['ps', '--json'], { env: env() });
    const doc = JSON.parse(run.stdout) as { supported: boolean; sandboxes: SandboxSummary[] };
    expect(doc.supported).toBe(true);
    expect(doc.sandboxes).toEqual([
      expect.objectContaining({ id: 'local:default:t1', userId: 'default', threadId: 't1' }),
    ]);
  });

  it('says so when there is nothing, on stderr, with an empty stdout', async () => {
    const run = await sbx(['ls'], { env: env() });
    expect(run).toMatchObject({ code: 0, stdout: '' });
    expect(run.stderr).toMatch(/no sandboxes/);
  });

  it("uses a provider's own listSandboxes()", async () => {
    const fake = memoryProviderClass();
    class Listing extends fake.Provider {
      async listSandboxes(): Promise<SandboxSummary[]> {
        return [{ id: 'box-1', state: 'running', location: 'http://127.0.0.1:8080' }];
      }
    }
    const run = await sbx(['ls', '--json', '--provider', '@fake/listing'], {
      importer: importerWith({ '@fake/listing': { default: Listing } }),
    });
    expect(JSON.parse(run.stdout)).toMatchObject({
      provider: '@fake/listing',
      supported: true,
      sandboxes: [{ id: 'box-1', state: 'running', location: 'http://127.0.0.1:8080' }],
    });
  });

  it('--label filters on spec labels (every one must match) and shows a labels column', async () => {
    const fake = memoryProviderClass();
    class Listing extends fake.Provider {
      async listSandboxes(): Promise<SandboxSummary[]> {
        return [
          { id: 'acme-1', state: 'active', labels: { 'sbx.dev/tenant': 'acme', tier: 'pro' } },
          { id: 'acme-2', state: 'warm', labels: { 'sbx.dev/tenant': 'acme' } },
          { id: 'other', state: 'active', labels: { 'sbx.dev/tenant': 'globex' } },
          { id: 'bare', state: 'active' },
        ];
      }
    }
    const importer = importerWith({ '@fake/listing': { default: Listing } });
    const base = ['ls', '--provider', '@fake/listing'];
    const acme = await sbx([...base, '--label', 'sbx.dev/tenant=acme'], { importer });
    const [header, ...rows] = acme.stdout.trimEnd().split('\n');
    expect(header).toMatch(/LOCATION\s+LABELS$/);
    expect(rows.map((r) => r.split(/\s+/)[0])).toEqual(['acme-1', 'acme-2']);
    const pro = await sbx([...base, '--json', '-l', 'sbx.dev/tenant=acme', '-l', 'tier=pro'], {
      importer,
    });
    expect(
      (JSON.parse(pro.stdout) as { sandboxes: { id: string }[] }).sandboxes.map((s) => s.id),
    ).toEqual(['acme-1']);
    const bad = await sbx([...base, '--label', 'no-equals'], { importer });
    expect(bad.code).toBe(2);
  });

  it('reports a provider that cannot list, without failing', async () => {
    const fake = memoryProviderClass();
    const run = await sbx(['ls', '--provider', '@fake/plain'], {
      importer: importerWith({ '@fake/plain': { default: fake.Provider } }),
    });
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/does not list its sandboxes/);
  });
});
