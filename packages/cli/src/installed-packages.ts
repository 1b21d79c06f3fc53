import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface InstalledPackage {
  readonly name: string;
  /** The package directory. */
  readonly dir: string;
  readonly version: string | undefined;
}

/** Finds packages the way Node resolves them: `node_modules/<name>` in each directory upwards. */
export type PackageFinder = (name: string) => Promise<InstalledPackage | undefined>;

async function readManifest(file: string): Promise<{ version?: unknown } | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw err;
  }
  try {
    return JSON.parse(text) as { version?: unknown };
  } catch {
    // A directory with an unreadable manifest is still an installed (if broken) package.
    return {};
  }
}

/**
 * Looks for `node_modules/<name>/package.json` from each of `fromDirs` upwards, as Node's resolver
 * does. Reading the directory rather than resolving the module avoids two traps: packages whose
 * `exports` map hides `package.json` or a `require` entry, and actually executing a vendor SDK just
 * to learn that it is there.
 */
export function packageFinder(fromDirs: readonly string[]): PackageFinder {
  return async (name) => {
    const seen = new Set<string>();
    for (const start of fromDirs) {
      let dir = path.resolve(start);
      for (;;) {
        if (!seen.has(dir)) {
          seen.add(dir);
          const packageDir = path.join(dir, 'node_modules', name);
          const manifest = await readManifest(path.join(packageDir, 'package.json'));
          if (manifest) {
            const version = typeof manifest.version === 'string' ? manifest.version : undefined;
            return { name, dir: packageDir, version };
          }
        }
        const parent = path.dirname(dir);
        if (parent === dir) break;
        dir = parent;
      }
    }
    return undefined;
  };
}

/** Where this module is installed: packages beside it are what a provider package would load. */
export function cliModuleDir(): string {
  return path.dirname(fileURLToPath(import.meta.url));
}
