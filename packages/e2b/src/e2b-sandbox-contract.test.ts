import { describeProcessContract, describeSandboxContract } from '@sbx/core/testing';
import { E2BSandbox } from './e2b-sandbox.js';
import { FakeE2BClient } from './testing/fake-e2b-client.js';

/** A sandbox on a fake control plane of its own; `connect` opens a second client of it. */
async function fakeSandbox() {
  const fake = new FakeE2BClient();
  const remote = await fake.create({ template: 'base', metadata: {} });
  await remote.commands.run('mkdir -p /home/user/workspace');
  return {
    sandbox: new E2BSandbox(remote.sandboxId, remote),
    workdir: '/mnt/user-data/workspace',
    cleanup: () => fake.dispose(),
    connect: async () => new E2BSandbox(remote.sandboxId, await fake.connect(remote.sandboxId)),
  };
}

describeSandboxContract('E2BSandbox over FakeE2BClient', fakeSandbox);

describeProcessContract('E2BSandbox over FakeE2BClient', fakeSandbox, {
  secondClient: (sut) => (sut as Awaited<ReturnType<typeof fakeSandbox>>).connect(),
});
