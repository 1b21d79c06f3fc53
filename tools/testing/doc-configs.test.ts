import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { processIo, validateConfigFile } from '@sbx/cli';
import { describe, expect, it } from 'vitest';
import { docFiles, extractConfigs, type DocConfig } from './doc-snippets.js';

const ROOT = path.join(import.meta.dirname, '..', '..');

async function configsOfDocs(): Promise<DocConfig[]> {
  const all: DocConfig[] = [];
  for (const file of await docFiles(ROOT))
    all.push(...extractConfigs(file, await readFile(file, 'utf8')));
  return all;
}

describe('every sandbox configuration the docs show', () => {
  it('validates as sbx config validate checks it, with every provider package installed', async () => {
    const configs = await configsOfDocs();
    expect(configs.map((c) => path.relative(ROOT, c.file))).toEqual(
      expect.arrayContaining(['docs/configuration.md', 'docs/operations.md']),
    );
    const dir = await mkdtemp(path.join(tmpdir(), 'sbx-doc-configs-'));
    try {
      const failures: string[] = [];
      for (const [i, config] of configs.entries()) {
        const file = path.join(dir, `config-${i}.yaml`);
        await writeFile(file, config.yaml);
        // The `$NAME` values a reader sets (API keys, URLs of their own) stand in as set.
        const env = { ...Object.fromEntries(config.variables.map((v) => [v, `stand-in-${v}`])) };
        const io = { ...processIo(), env, cwd: dir };
        const result = await validateConfigFile(file, { io });
        for (const issue of result.issues) {
          failures.push(
            `${path.relative(ROOT, config.file)}:${config.line}: ${issue.path}: ${issue.message}`,
          );
        }
        for (const warning of result.warnings ?? []) {
          failures.push(`${path.relative(ROOT, config.file)}:${config.line}: ${warning}`);
        }
      }
      expect(failures).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
