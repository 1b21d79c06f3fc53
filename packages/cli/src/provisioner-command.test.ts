import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { KubeStandin } from '@sbx/provisioner/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { closedPort, sbx, tempDir } from './test-support.js';

describe('sbx provisioner', () => {
  let standin: KubeStandin;
  let dir: { dir: string; remove: () => Promise<void> };
  beforeEach(async () => {
    standin = await KubeStandin.start();
    dir = await tempDir('provisioner');
  });
  afterEach(async () => {
    await standin.close();
    await dir.remove();
  });

  it('serves the API from the environment and the config block until interrupted, then exits 0', async () => {
    const kubeconfig = await standin.writeKubeconfig(dir.dir);
    const config = path.join(dir.dir, 'sbx.yaml');
    await writeFile(
      config,
      'sandbox:\n  provisioner:\n    namespace: from-file\n    node_host: 127.0.0.1\n',
    );
    const port = await closedPort();
    const controller = new AbortController();
    const run = sbx(['provisioner', '--config', config, '--port', String(port)], {
      env: { KUBECONFIG_PATH: kubeconfig, PROVISIONER_API_KEY: 'k' },
      signal: controller.signal,
    });
    let health: Response | undefined;
    await expect
      .poll(
        async () => {
          health = await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined);
          return health?.status;
          // Starting loads the provisioner and the Kubernetes client: seconds on a busy machine.
        },
        { timeout: 60_000 },
      )
      .toBe(200);
    const created = await fetch(`http://127.0.0.1:${port}/api/sandboxes`, {
      method: 'POST',
      headers: { 'x-api-key': 'k', 'content-type': 'application/json' },
      body: JSON.stringify({ sandbox_id: 'cli1' }),
    });
    expect(created.status).toBe(200);
    expect(standin.pods('from-file')).toHaveLength(1);
    controller.abort();
    const result = await run;
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(
      `sbx provisioner: listening on http://127.0.0.1:${port} (namespace from-file`,
    );
  });

  it('a bad setting stops it at start-up with the variable named (exit 1)', async () => {
    const result = await sbx(['provisioner'], { env: { SANDBOX_SERVICE_TYPE: 'LoadBalancer' } });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('SANDBOX_SERVICE_TYPE');
  });

  it('without @sbx/provisioner installed it says what to install (exit 3)', async () => {
    const importer = async (specifier: string) => {
      const err = new Error(`Cannot find package '${specifier}'`) as Error & { code: string };
      err.code = 'ERR_MODULE_NOT_FOUND';
      throw err;
    };
    const result = await sbx(['provisioner', '--json'], { importer });
    expect(result.code).toBe(3);
    expect(JSON.parse(result.stdout)).toMatchObject({
      ok: false,
      error: { code: 'MISSING_DEPENDENCY' },
    });
    expect(result.stdout).toContain('@sbx/provisioner');
  });
});
